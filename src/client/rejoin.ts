/**
 * A detached stream that survives its connection: when the connection drops
 * mid-stream, the run is joined again (join_run) from the last `seq` seen,
 * on the connection the client opens again (`reconnect`), so the caller sees
 * every event once, in order, ending with `end`.
 */
import type { StreamEvent } from '../shared/wire/ops.ts';
import { ConnectionClosedError } from './errors.ts';

/** Joins a run from after `afterSeq`. */
export type JoinRun = (runId: string, afterSeq: number) => AsyncIterable<StreamEvent>;

/** Tries in a row that may fail before a rejoin gives up (the daemon may be restarting). */
const REJOIN_TRIES = 10;
const REJOIN_PAUSE_MS = 100;

export async function* rejoining(first: AsyncIterable<StreamEvent>, join: JoinRun): AsyncGenerator<StreamEvent> {
  let runId: string | null = null;
  let seq = 0;
  let source = first;
  let failures = 0;
  for (;;) {
    try {
      for await (const ev of source) {
        failures = 0;
        if (ev.type === 'start' && typeof ev.run_id === 'string') runId = ev.run_id;
        if (typeof ev.seq === 'number') {
          if (ev.seq <= seq) continue; // already yielded before the connection dropped
          seq = ev.seq;
        }
        yield ev;
      }
      return;
    } catch (err) {
      // Before `start` the run has no id to join: the caller sees the loss.
      if (!(err instanceof ConnectionClosedError) || runId === null || ++failures > REJOIN_TRIES) throw err;
      if (failures > 1) await new Promise((r) => setTimeout(r, REJOIN_PAUSE_MS * failures));
      source = join(runId, seq);
    }
  }
}
