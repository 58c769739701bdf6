/**
 * Main's record of every turn routed to a shard and not yet ended (client
 * turns and bus-fired ones alike), numbered by a seq. It answers three
 * questions: how many turns a conversation holds (the queued-turn limit),
 * which turns a dead or frozen shard took with it, and which of those had
 * started running (and so may have been stored, or must be stored `stalled`).
 */
import { StopReason, type Stored } from '../shared/protocol.ts';
import { outcomeCode, type TurnRequest } from '../shared/threads/shard-messages.ts';
import { tracing } from './traces/tracing-state.ts';

export interface OpenTurn {
  seq: number;
  shard: number;
  req: TurnRequest;
  /** The shard said it started running (a batch's `turnsStarted`). */
  started: boolean;
  /** performance.now() when main routed it, and when the shard said it started (0 until then), for the metrics. */
  openedAt: number;
  startedAt: number;
  /** Traces: the W3C traceparent of the turn's parent span (a forwarded call's, from another node); absent for a root. */
  traceparent?: string;
  /** What its client was told when it failed with an error (set just before it ends). */
  error?: { code: number; message: string };
}

/** Told of every turn as it ends (the metrics): how it ended is an index into TURN_OUTCOMES. */
export interface TurnMeterSink {
  turnEnded(t: OpenTurn, outcome: number): void;
}

/** How a turn lost with its shard is reported to its client. */
export interface LostVerdict {
  stopReason: StopReason;
  stored: Stored;
  /** It was running on a stalled shard: the replacement stores it as ended `stalled`. */
  recordStalled: boolean;
}

const MAX_SEQ = 0x7fffffff; // seqs travel through an Int32Array cell
const LOST = outcomeCode('lost');

const pairKey = (agent: string, sender: string): string => `${agent}\u0000${sender}`;

export class TurnLedger {
  readonly #open = new Map<number, OpenTurn>();
  readonly #meter: TurnMeterSink | null;
  /** Open (running or queued) non-ephemeral turns per conversation. */
  readonly #perPair = new Map<string, number>();
  #lastSeq = 0;

  constructor(meter: TurnMeterSink | null = null) {
    this.#meter = meter;
  }

  get size(): number {
    return this.#open.size;
  }

  /** Turns the pair holds now, running and queued (ephemeral turns queue nowhere and are not counted). */
  held(agent: string, sender: string): number {
    return this.#perPair.get(pairKey(agent, sender)) ?? 0;
  }

  /** Numbers the turn (sets `req.seq`) and records it as open on `shard`. */
  open(shard: number, req: TurnRequest): void {
    let seq = this.#lastSeq;
    do seq = seq >= MAX_SEQ ? 1 : seq + 1;
    while (this.#open.has(seq));
    this.#lastSeq = seq;
    req.seq = seq;
    const t: OpenTurn = { seq, shard, req, started: false, openedAt: performance.now(), startedAt: 0 };
    if (tracing.remoteParent !== null) t.traceparent = tracing.remoteParent;
    this.#open.set(seq, t);
    if (!req.ephemeral) this.#adjust(req, 1);
  }

  /** The open turn `seq`, if it is open. */
  get(seq: number): OpenTurn | undefined {
    return this.#open.get(seq);
  }

  started(seq: number): void {
    const t = this.#open.get(seq);
    if (t === undefined) return;
    t.started = true;
    t.startedAt = performance.now();
  }

  /** The shard told what a failing turn's client got: kept for the meters, which see the turn as it ends. */
  failed(seq: number, error: { code: number; message: string }): void {
    const t = this.#open.get(seq);
    if (t !== undefined) t.error = error;
  }

  /** Forgets an ended turn; returns it (undefined if unknown, e.g. already taken with its shard). */
  ended(seq: number, outcome: number): OpenTurn | undefined {
    const t = this.#open.get(seq);
    if (t === undefined) return undefined;
    this.#open.delete(seq);
    if (!t.req.ephemeral) this.#adjust(t.req, -1);
    this.#meter?.turnEnded(t, outcome);
    return t;
  }

  /** Forgets and returns every open turn of a shard that died or froze. */
  takeShard(shard: number): OpenTurn[] {
    const lost = [...this.#open.values()].filter((t) => t.shard === shard);
    for (const t of lost) this.ended(t.seq, LOST);
    return lost;
  }

  /** Open turns per shard, running and queued (read when metrics are scraped). */
  perShard(shards: number): { running: number[]; queued: number[] } {
    const running = new Array<number>(shards).fill(0);
    const queued = new Array<number>(shards).fill(0);
    for (const t of this.#open.values()) (t.started ? running : queued)[t.shard]!++;
    return { running, queued };
  }

  #adjust(req: TurnRequest, by: number): void {
    const key = pairKey(req.agent, req.sender);
    const n = (this.#perPair.get(key) ?? 0) + by;
    if (n <= 0) this.#perPair.delete(key);
    else this.#perPair.set(key, n);
  }
}

/**
 * What a lost turn's client is told. A turn that had not started stored
 * nothing. One that was running on a crashed shard may have committed just
 * before the crash: unknown (a retry with its turn_id settles it). One that
 * was running on a stalled shard is stored as ended `stalled` by the
 * replacement before that shard takes any message.
 */
export function lostVerdict(t: OpenTurn | undefined, runningSeq: number, cause: 'crash' | 'stall'): LostVerdict {
  if (t === undefined) return { stopReason: StopReason.Error, stored: 'unknown', recordStalled: false };
  const running = t.started || t.seq === runningSeq;
  if (!running || t.req.ephemeral) return { stopReason: StopReason.Error, stored: false, recordStalled: false };
  if (cause === 'stall') return { stopReason: StopReason.Stalled, stored: true, recordStalled: true };
  return { stopReason: StopReason.Error, stored: 'unknown', recordStalled: false };
}
