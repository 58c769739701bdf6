/** Small readers of a turn's stream events, shared by the end-to-end tests. */
import type { StreamEvent } from '../../src/client/index.ts';

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
