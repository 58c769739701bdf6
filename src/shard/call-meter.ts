/**
 * What a shard did for its turns, for the metrics and traces: each model
 * call, tool call and commit, with its start and duration. Recorded only
 * while main wants them (`ShardInit.observe`: metrics or traces on); then
 * they ride to main in the shard's next frame batch (`calls`), never one
 * message per call. While off, recording costs a turn one boolean test.
 *
 * One per worker thread (module state): every recording site reaches it
 * without the turn threading it through.
 */
import type { CallRecord } from '../shared/threads/shard-messages.ts';

export class CallMeter {
  on = false;
  #records: CallRecord[] = [];
  /** The outbox: a record schedules a batch, so nothing waits for the next turn. */
  onRecord: (() => void) | null = null;

  /** Epoch milliseconds now, to the microsecond (spans need wall-clock times). */
  static now(): number {
    return performance.timeOrigin + performance.now();
  }

  record(r: CallRecord): void {
    this.#records.push(r);
    this.onRecord?.();
  }

  get pending(): boolean {
    return this.#records.length > 0;
  }

  /** The records since the last take, or null when there are none. */
  take(): CallRecord[] | null {
    if (this.#records.length === 0) return null;
    const out = this.#records;
    this.#records = [];
    return out;
  }
}

export const callMeter = new CallMeter();

/** How a call ended, from what it threw (nothing: ok). */
export function callStatus(err: unknown, cancelled: boolean): CallRecord['status'] {
  if (err === undefined) return 'ok';
  return cancelled ? 'cancelled' : 'error';
}
