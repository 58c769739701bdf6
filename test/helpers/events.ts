/** Small readers of a turn's stream events, shared by the end-to-end tests. */
import type { AgentEvent, AgentdClient, StreamEvent } from '../../src/client/index.ts';

export type EndEvent = Extract<StreamEvent, { type: 'end' }>;

/** The event types in order. */
export const types = (evs: StreamEvent[]): string[] => evs.map((e) => e.type);

/** The streamed text: every chunk, concatenated. */
export const text = (evs: StreamEvent[]): string => evs.map((e) => (e.type === 'chunk' ? e.content : '')).join('');

/** How many chunks were streamed. */
export const chunkCount = (evs: StreamEvent[]): number => evs.filter((e) => e.type === 'chunk').length;

/** The last event, which every stream ends with: `end`. */
export function end(evs: StreamEvent[]): EndEvent {
  const last = evs.at(-1);
  if (last?.type !== 'end') throw new Error(`the stream did not end with "end": ${JSON.stringify(types(evs))}`);
  return last;
}

/**
 * Collects agent events (of `agent`, or all) in the background until the
 * test ends. Resolves once the subscription is registered: a ping on the
 * same connection, sent after subscribe_events, is answered only after main
 * has handled the subscription.
 */
export async function watchEvents(c: AgentdClient, agent?: string): Promise<AgentEvent[]> {
  const seen: AgentEvent[] = [];
  const it = c.events(agent)[Symbol.asyncIterator]();
  const first = it.next(); // runs the generator to its first await: subscribe_events is written now
  void (async () => {
    try {
      for (let r = await first; !r.done; r = await it.next()) seen.push(r.value);
    } catch {
      // the connection closed at the end of the test
    }
  })();
  await c.ping();
  return seen;
}

/** Reads a stream until an event of `type` (returned with everything before it); throws if the stream ends first. */
export async function until(it: AsyncIterator<StreamEvent>, type: string): Promise<StreamEvent[]> {
  const seen: StreamEvent[] = [];
  for (let r = await it.next(); !r.done; r = await it.next()) {
    seen.push(r.value);
    if (r.value.type === type) return seen;
  }
  throw new Error(`the stream ended before ${type}: ${JSON.stringify(types(seen))}`);
}
