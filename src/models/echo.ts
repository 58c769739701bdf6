/**
 * `echo`: a deterministic model for demos, tests and benchmarks.
 *
 * - Streams the last user message back, one chunk per word; each chunk is the
 *   word and the whitespace after it (leading whitespace rides on the first),
 *   so the chunks concatenate to the message exactly.
 * - `/call <tool> <json>` requests that tool; after the result it answers with
 *   the tool's output text.
 * - When the newest message is a user message that came after a tool result
 *   (a message `steer`ed into a running turn), it streams that message back,
 *   as text (never as a `/call`).
 * - Agent option `echo: {delay_ms, cpu_us}`: an awaited, cancellable wait and
 *   a CPU burn before each chunk.
 * - Asked to compact, it answers with a deterministic summary: how many
 *   messages, and the first words of each user message.
 * - Usage: prompt = words in the messages sent, completion = words produced.
 */
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import type { Model, ModelEvent, ModelRequest, Message } from './types.ts';

const CALL = /^\/call\s+(\S+)\s*([\s\S]*)$/;

const WORD = /\S+/g;

/**
 * A long answer without delay_ms yields to the event loop this often: the
 * shard then answers its watchdog, other turns run, and the outbox hands
 * what is produced so far to main instead of holding the whole answer.
 */
const YIELD_EVERY_MS = 10;

/**
 * Fault injection for the watchdog's tests only: burn each chunk's cpu_us in
 * one go, freezing the shard as a bug would. Set by whoever starts the
 * daemon, never by a client.
 */
const SYNC_BURN = process.env.AGENTD_TEST_SYNC_BURN === '1';

/** Words as the echo model counts tokens: runs of non-whitespace. */
export function countWords(text: string): number {
  let n = 0;
  WORD.lastIndex = 0;
  while (WORD.exec(text) !== null) n++;
  return n;
}

/**
 * Running word counts: the words of a history up to and including its newest
 * counted message. A history only grows at its end or is rebuilt from a new
 * first message (load, compaction), so a count is reused only where the
 * message sits at the same index behind the same first and previous messages;
 * a turn then counts its new messages only, however long its conversation.
 * Only the newest count of a history is kept: an entry per message would make
 * every garbage collection walk a weak table as long as all the histories.
 */
const prefixWords = new WeakMap<Message, { index: number; first: Message; before: Message | null; total: number }>();

/** Matches counted between two looks at the clock while counting a long text. */
const COUNT_CHECK_EVERY = 65_536;

/** Where counting must start: just past the newest message whose running count still holds. */
function countedPrefix(messages: readonly Message[]): { from: number; total: number } {
  for (let i = messages.length - 1; i >= 0; i--) {
    const hit = prefixWords.get(messages[i]!);
    if (hit !== undefined && hit.index === i && hit.first === messages[0] && hit.before === (i === 0 ? null : messages[i - 1]!)) return { from: i + 1, total: hit.total };
  }
  return { from: 0, total: 0 };
}

/**
 * `total` plus the words of messages[from..], yielding to the event loop
 * every YIELD_EVERY_MS: a conversation of many megabytes, counted the first
 * time it is sent, must not hold its shard for seconds.
 */
async function addWords(messages: readonly Message[], from: number, total: number): Promise<number> {
  let slice = performance.now();
  for (let i = from; i < messages.length; i++) {
    const word = /\S+/g;
    let n = 0;
    while (word.exec(messages[i]!.content) !== null) {
      if (++n % COUNT_CHECK_EVERY === 0 && performance.now() - slice > YIELD_EVERY_MS) {
        await nextTurn();
        slice = performance.now();
      }
    }
    total += n;
  }
  return total;
}

/** The words of a conversation's history, counting only what was added since its last count. */
async function historyWords(history: readonly Message[]): Promise<number> {
  const { from, total: counted } = countedPrefix(history);
  if (from === history.length) return counted;
  if (from > 0) prefixWords.delete(history[from - 1]!);
  const total = await addWords(history, from, counted);
  const last = history.length - 1;
  prefixWords.set(history[last]!, { index: last, first: history[0]!, before: last === 0 ? null : history[last - 1]!, total });
  return total;
}

/** The first `n` words of a text, without splitting all of it. */
function firstWords(text: string, n: number): string {
  const word = /\S+/g;
  const words: string[] = [];
  for (let m = word.exec(text); m !== null && words.length < n; m = word.exec(text)) words.push(m[0]);
  return words.join(' ');
}

/** Splits text into word chunks that concatenate back to it exactly. */
export function wordChunks(text: string): string[] {
  return [...eachWordChunk(text)];
}

/**
 * The chunks of wordChunks, one at a time: a 16 MiB message is 8M words, and
 * an array of them all would cost many times the message.
 */
export function* eachWordChunk(text: string): Generator<string> {
  const word = /\S+\s*/g;
  const lead = text.length - text.trimStart().length;
  if (lead === text.length) {
    if (text.length > 0) yield text;
    return;
  }
  word.lastIndex = lead;
  let first = true;
  for (let m = word.exec(text); m !== null; m = word.exec(text)) {
    yield first && lead > 0 ? text.slice(0, lead) + m[0] : m[0];
    first = false;
  }
}

/** Busy-waits `us` microseconds: a model that costs CPU, not wall time. */
export function burnCpu(us: number): void {
  if (us <= 0) return;
  const until = performance.now() + us / 1000;
  while (performance.now() < until) {
    // spin
  }
}

/**
 * Burns `us` microseconds in slices of at most YIELD_EVERY_MS, yielding to
 * the event loop between them: a chunk's burn (up to ECHO_MAX.cpu_us) then
 * never keeps the shard from its watchdog or from the other turns it runs.
 * Returns when the last slice began, for the caller's own yield clock.
 */
async function burnYielding(us: number, cancel: ModelRequest['cancel'], slice: number): Promise<number> {
  if (SYNC_BURN) {
    burnCpu(us);
    return slice;
  }
  const step = YIELD_EVERY_MS * 1000;
  for (let left = us; left > 0; left -= step) {
    if (performance.now() - slice > YIELD_EVERY_MS) {
      await nextTurn();
      cancel.throwIfAborted();
      slice = performance.now();
    }
    burnCpu(Math.min(left, step));
  }
  return slice;
}

function lastTurnInput(messages: readonly Message[]): { toolOutputs: string[] | null; user: string; steered?: true } {
  const outputs: string[] = [];
  let i = messages.length - 1;
  if (messages[i]?.role === 'user' && messages[i - 1]?.role === 'tool') return { toolOutputs: null, user: messages[i]!.content, steered: true };
  while (i >= 0 && messages[i]!.role === 'tool') outputs.unshift(messages[i--]!.content);
  if (outputs.length > 0) return { toolOutputs: outputs, user: '' };
  for (; i >= 0; i--) if (messages[i]!.role === 'user') return { toolOutputs: null, user: messages[i]!.content };
  return { toolOutputs: null, user: '' };
}

export class EchoModel implements Model {
  readonly name = 'echo';

  async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    const { history, messages, cancel, agent } = request;
    // The turn's own messages are few: counted afresh at each of its model calls.
    const prompt = await addWords(messages, 0, await historyWords(history));
    cancel.throwIfAborted();
    if (request.purpose === 'compact') {
      yield* this.#summary(history, prompt);
      return;
    }
    const { toolOutputs, user, steered } = lastTurnInput(messages);

    const call = toolOutputs === null && steered !== true ? CALL.exec(user.trim()) : null;
    if (call !== null) {
      cancel.throwIfAborted();
      // This turn's steps so far: a history of earlier tool turns is not walked.
      const step = messages.filter((m) => m.role === 'assistant' && m.tool_calls !== undefined).length;
      yield { type: 'tool_call', call: { id: `call_${step + 1}_1`, name: call[1]!, arguments: call[2]!.trim() || '{}' } };
      yield { type: 'usage', usage: { prompt_tokens: prompt, completion_tokens: 0, total_tokens: prompt } };
      return;
    }

    const text = toolOutputs === null ? user : toolOutputs.join('\n');
    const { delay_ms: delayMs, cpu_us: cpuUs } = agent.echo;
    let produced = 0;
    let slice = performance.now();
    for (const chunk of eachWordChunk(text)) {
      if (delayMs > 0) await sleep(delayMs, undefined, { signal: cancel.signal });
      // Reading the clock per chunk costs a long cheap answer; a burning one checks every chunk.
      else if (((cpuUs > 0 && !SYNC_BURN) || (produced & 1023) === 1023) && performance.now() - slice > YIELD_EVERY_MS) {
        await nextTurn();
        slice = performance.now();
      }
      cancel.throwIfAborted();
      if (cpuUs > 0) slice = await burnYielding(cpuUs, cancel, slice);
      produced++;
      // The answer is `text` itself: announcing it spares the loop a copy of every chunk.
      yield produced === 1 ? { type: 'text', delta: chunk, whole: text } : { type: 'text', delta: chunk };
    }
    yield { type: 'usage', usage: { prompt_tokens: prompt, completion_tokens: produced, total_tokens: prompt + produced } };
  }

  *#summary(history: readonly Message[], prompt: number): Iterable<ModelEvent> {
    const said = history.filter((m) => m.role === 'user').map((m) => firstWords(m.content, 6));
    const text = `${history.length} messages; the user said: ${said.join(' / ')}`;
    yield { type: 'text', delta: text };
    const words = countWords(text);
    yield { type: 'usage', usage: { prompt_tokens: prompt, completion_tokens: words, total_tokens: prompt + words } };
  }
}
