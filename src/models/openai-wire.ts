/**
 * The chat-completions request body, as the JSON text sent. A request
 * carries the whole history, so serializing it anew made every turn cost
 * time in proportion to its conversation's length (a long history: the
 * bulk of the shard's time for the turn). The serialized history of the
 * most recently used long conversations is kept (WirePrefixes) and a turn
 * serializes only what was appended since; the body is the same text either
 * way, byte for byte.
 */
import type { ToolChoice } from '../shared/protocol.ts';
import type { Message, ModelRequest, ToolSpec } from './types.ts';

export function wireMessage(m: Message): unknown {
  if (m.role === 'tool') return { role: 'tool', tool_call_id: m.tool_call_id, content: m.content };
  if (m.role === 'assistant' && m.tool_calls !== undefined && m.tool_calls.length > 0) {
    return {
      role: 'assistant',
      content: m.content === '' ? null : m.content,
      tool_calls: m.tool_calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
    };
  }
  return { role: m.role, content: m.content };
}

function wireTools(tools: readonly ToolSpec[]): unknown[] {
  return tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
}

function wireToolChoice(choice: ToolChoice | null): unknown {
  if (choice === null) return undefined;
  if (typeof choice === 'string' && !['auto', 'none', 'required'].includes(choice)) return { type: 'function', function: { name: choice } };
  return choice;
}

/**
 * A history shorter than this is serialized whole each time: it is cheap,
 * and conversation.ts replaces a short history's array as it grows.
 */
export const PREFIX_MIN_MESSAGES = 32;

/**
 * The most characters of serialized histories kept per thread (about twice
 * as many bytes at worst). A kept entry also keeps its history array alive
 * after its conversation left the shard's table, so the bound covers both.
 */
export const PREFIX_CACHE_CHARS = 8 * 1024 * 1024;

/** A history's first `count` messages as JSON array elements, comma-separated; `last` is its message at `count - 1`. */
interface Prefix {
  count: number;
  last: Message;
  json: string;
}

/**
 * Serialized histories, least recently used first (a Map keeps insertion
 * order), within `maxChars`. A history is only ever appended to in place
 * (conversation.ts; a compaction gives the conversation a new array), so an
 * entry still holds while its last message is where it was.
 */
export class WirePrefixes {
  readonly #entries = new Map<readonly Message[], Prefix>();
  #chars = 0;

  constructor(readonly maxChars: number = PREFIX_CACHE_CHARS) {}

  /** The history's messages as JSON array elements, comma-separated ('' for none). */
  json(history: readonly Message[]): string {
    const kept = this.#entries.get(history);
    if (kept !== undefined) this.#drop(history, kept);
    const usable = kept !== undefined && kept.count <= history.length && history[kept.count - 1] === kept.last;
    let json = usable ? kept.json : '';
    for (let i = usable ? kept.count : 0; i < history.length; i++) json += (i === 0 ? '' : ',') + JSON.stringify(wireMessage(history[i]!));
    if (history.length >= PREFIX_MIN_MESSAGES && json.length <= this.maxChars) this.#keep(history, { count: history.length, last: history[history.length - 1]!, json });
    return json;
  }

  /** Characters kept now. */
  get chars(): number {
    return this.#chars;
  }

  #keep(history: readonly Message[], prefix: Prefix): void {
    this.#entries.set(history, prefix);
    this.#chars += prefix.json.length;
    for (const [oldest, entry] of this.#entries) {
      if (this.#chars <= this.maxChars) break;
      this.#drop(oldest, entry);
    }
  }

  #drop(history: readonly Message[], entry: Prefix): void {
    this.#entries.delete(history);
    this.#chars -= entry.json.length;
  }
}

const threadPrefixes = new WirePrefixes();

/**
 * The request's body: model, messages (system prompt, history, this turn's
 * messages), stream options, then tools and tool choice when there are tools.
 */
export function requestBody(request: ModelRequest, prefixes: WirePrefixes = threadPrefixes): string {
  const { agent } = request;
  // Concatenated, not joined: joining would copy the whole history's text once more.
  let messages = agent.system_prompt === '' ? '' : JSON.stringify({ role: 'system', content: agent.system_prompt });
  const history = prefixes.json(request.history);
  if (history !== '') messages = messages === '' ? history : `${messages},${history}`;
  for (const m of request.messages) messages = messages === '' ? JSON.stringify(wireMessage(m)) : `${messages},${JSON.stringify(wireMessage(m))}`;
  let body = `{"model":${JSON.stringify(agent.model)},"messages":[${messages}],"stream":true,"stream_options":{"include_usage":true}`;
  if (request.tools.length > 0) {
    body += `,"tools":${JSON.stringify(wireTools(request.tools))}`;
    const choice = wireToolChoice(request.toolChoice);
    if (choice !== undefined) body += `,"tool_choice":${JSON.stringify(choice)}`;
  }
  return `${body}}`;
}
