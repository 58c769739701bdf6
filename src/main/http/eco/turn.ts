/**
 * What the ecosystem routes (OpenAI-compatible, A2A, MCP) share: a turn run
 * through dispatch and read to its end, the text of its chunks, and the
 * `end` frame's outcome. Each protocol shapes that into its own replies.
 */
import { AgentdError, Code } from '../../../shared/errors.ts';
import type { HttpRequester } from '../http-requester.ts';
import { streamTurn, type StreamFrame, type TurnRequest } from '../sse.ts';

/** The turn's `end` frame, as PROTOCOL §4.1 gives it. */
export interface TurnEnd {
  agent: string;
  error: string;
  model: string;
  usage: TurnUsage;
  stop_reason: string;
}

export interface TurnUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cache_hit_tokens?: number;
  reasoning_tokens?: number;
}

/** A turn read to its end. */
export interface TurnOutcome {
  runId: string;
  text: string;
  end: TurnEnd;
}

/** What a turn streams, as the ecosystem routes see it: its run id, text deltas, and its end. */
export type TurnEvent = { kind: 'start'; runId: string } | { kind: 'delta'; text: string } | { kind: 'end'; end: TurnEnd };

const ZERO_USAGE: TurnUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };

export function endOf(data: Record<string, unknown>): TurnEnd {
  return {
    agent: String(data.agent ?? ''),
    error: String(data.error ?? ''),
    model: String(data.model ?? ''),
    usage: { ...ZERO_USAGE, ...(data.usage as TurnUsage | undefined) },
    stop_reason: String(data.stop_reason ?? ''),
  };
}

/**
 * A turn's events: `start` (its run id), one `delta` per text chunk, `end`.
 * An error before `start` (unknown agent: 404, busy: 409, …) is thrown from
 * the iterator before anything is yielded; a stream cut before its `end`
 * (the client went away) ends with a 499.
 */
export async function* turnEvents(requester: HttpRequester, turn: TurnRequest): AsyncGenerator<TurnEvent> {
  let ended = false;
  for await (const f of streamTurn(requester, turn) as AsyncIterable<StreamFrame>) {
    if (f.event === 'start') yield { kind: 'start', runId: String(f.data.run_id ?? '') };
    else if (f.event === 'chunk') yield { kind: 'delta', text: String(f.data.content ?? '') };
    else if (f.event === 'end') {
      ended = true;
      yield { kind: 'end', end: endOf(f.data) };
    }
  }
  if (!ended) throw new AgentdError(Code.Cancelled, 'the turn was cut before its end');
}

/** Runs a turn to its end: its run id, its text, its end. */
export async function runTurn(requester: HttpRequester, turn: TurnRequest): Promise<TurnOutcome> {
  let runId = '';
  let text = '';
  for await (const ev of turnEvents(requester, turn)) {
    if (ev.kind === 'start') runId = ev.runId;
    else if (ev.kind === 'delta') text += ev.text;
    else return { runId, text, end: ev.end };
  }
  throw new AgentdError(Code.Cancelled, 'the turn was cut before its end');
}

/** Whether a turn's end is a success (PROTOCOL §4.1 `stop_reason`). */
export function succeeded(end: TurnEnd): boolean {
  return end.error === '' && (end.stop_reason === 'text' || end.stop_reason === 'no_action' || end.stop_reason === 'max_iterations');
}

/** The agents registered now, by name (`list_agents`). */
export async function agentNames(call: (op: string, args: Record<string, unknown>) => Promise<unknown>): Promise<{ name: string; description: string; model: string }[]> {
  const list = (await call('list_agents', {})) as { agents: { name: string; description?: string; model?: string }[] };
  return list.agents.map((a) => ({ name: a.name, description: a.description ?? '', model: a.model ?? '' }));
}

/** Seconds since the epoch, as OpenAI's `created` fields. */
export function unixNow(): number {
  return Math.floor(Date.now() / 1000);
}
