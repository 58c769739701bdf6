/**
 * What a shard did for its turns, for the metrics and traces: each model
 * call, tool call and commit. Recorded only while main wants them
 * (`ShardInit.observe`); while off, a recording site costs a turn one
 * boolean test. For the metrics, calls are summed into tallies
 * (call-tally.ts), which go to main only when it asks (a scrape: a
 * TalliesQuery), in the batch that answers. For the traces, each call of a
 * turn is kept with its start and duration (CallRecord) and rides to main
 * in the shard's next frame batch. Never one message per call.
 *
 * One per worker thread (module state): every recording site reaches it
 * without the turn threading it through.
 */
import { Tallies, SIZE_BUCKETS, bucketOf, type CallStatus, type Tally } from '../shared/threads/call-tally.ts';
import type { CallRecord } from '../shared/threads/shard-messages.ts';

/** This thread's performance.timeOrigin, read once: its getter validates its receiver on every read. */
const TIME_ORIGIN = performance.timeOrigin;

export class CallMeter {
  /** Metrics or traces are on: recording sites test this first. */
  on = false;
  metrics = false;
  spans = false;
  readonly #tallies = new Tallies();
  /** Main asked for the tallies (a scrape): the next batch carries them. */
  talliesAsked = false;
  #spans: CallRecord[] = [];
  /** The outbox: a timed call schedules a batch, so nothing waits for the next turn. */
  onRecord: (() => void) | null = null;

  /** Epoch milliseconds now, to the microsecond (spans need wall-clock times). */
  static now(): number {
    return TIME_ORIGIN + performance.now();
  }

  observe(what: { metrics: boolean; spans: boolean }): void {
    this.metrics = what.metrics;
    this.spans = what.spans;
    this.on = what.metrics || what.spans;
  }

  model(seq: number, model: string, provider: string, status: CallStatus, start: number, ms: number, inputTokens: number, outputTokens: number): void {
    if (this.metrics) this.#tallies.add('model', provider, model, status, ms / 1000, inputTokens, outputTokens);
    if (this.spans) this.#span({ kind: 'model', seq, name: model, via: provider, status, start, ms, inputTokens, outputTokens });
  }

  tool(seq: number, name: string, server: string, status: CallStatus, start: number, ms: number): void {
    if (this.metrics) this.#tallies.add('tool', server, name, status, ms / 1000);
    if (this.spans) this.#span({ kind: 'tool', seq, name, via: server, status, start, ms });
  }

  /** One turn's commit, as its turn waited for it (the traces). */
  commit(seq: number, status: CallStatus, start: number, ms: number): void {
    if (this.spans) this.#span({ kind: 'commit', seq, name: '', via: '', status, start, ms });
  }

  #span(r: CallRecord): void {
    this.#spans.push(r);
    this.onRecord?.();
  }

  /** A group commit of `turns` turns (the metrics). */
  commitBatch(status: CallStatus, ms: number, turns: number): void {
    if (!this.metrics) return;
    this.#tallies.add('commit_batch', '', '', status, ms / 1000);
    const t = this.#tallies.get('commit_batch', '', '', status);
    t.size += turns;
    t.sizes![bucketOf(SIZE_BUCKETS, turns)]!++;
  }

  /** A compaction: asked by a client (`request`) or run before a turn whose history passed its threshold (`auto`). */
  compaction(trigger: CompactionTrigger, status: CallStatus, ms: number): void {
    if (this.metrics) this.#tallies.add('compaction', trigger, '', status, ms / 1000);
  }

  evicted(conversations: number): void {
    if (!this.metrics) return;
    this.#tallies.get('evict', '', '', 'ok').n += conversations;
  }

  /** Timed calls wait to be shipped (tallies wait for main to ask). */
  get pending(): boolean {
    return this.#spans.length > 0;
  }

  /** The tallies since the last take, when main asked for them (else null, and they keep summing). */
  takeTallies(): Tally[] | null {
    if (!this.talliesAsked) return null;
    this.talliesAsked = false;
    return this.#tallies.take();
  }

  /** The calls recorded for spans since the last take, or null when there are none. */
  takeSpans(): CallRecord[] | null {
    if (this.#spans.length === 0) return null;
    const out = this.#spans;
    this.#spans = [];
    return out;
  }
}

export type CompactionTrigger = 'auto' | 'request';

export const callMeter = new CallMeter();

/** How a call ended, from what it threw (nothing: ok). */
export function callStatus(err: unknown, cancelled: boolean): CallStatus {
  if (err === undefined) return 'ok';
  return cancelled ? 'cancelled' : 'error';
}
