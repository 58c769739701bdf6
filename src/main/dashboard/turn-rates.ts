/**
 * What the live view (dashboard, `agentctl top`) knows of ended turns, told
 * by the turn ledger as each ends: a ring of per-second buckets (turns,
 * failures, a latency histogram on a log scale), turns and failures per
 * agent since start, and a bounded ring of the latest failed turns. A turn's
 * end costs a Date.now(), a logarithm and a few additions; everything else
 * is computed when a snapshot is taken (once a second at most per reader).
 * It then hands the turn on to the Prometheus meter, when metrics are on.
 */
import { TURN_OUTCOMES } from '../../shared/threads/shard-messages.ts';
import type { DashboardError, DashboardSecond } from '../../shared/wire/dashboard.ts';
import type { OpenTurn, TurnMeterSink } from '../turn-ledger.ts';

/** Seconds of history kept (the chart's span). */
export const SECONDS = 300;
/** Latency buckets: bucket i holds turns up to FIRST_MS × GROWTH^i (the last one, anything longer). */
const BUCKETS = 80;
const FIRST_MS = 0.05;
const GROWTH = 1.25;
const LOG_GROWTH = Math.log(GROWTH);
/** Failed turns remembered. */
export const MAX_ERRORS = 50;
/** Agents counted at most: past it the longest-known is forgotten (deleted agents' names must not pile up). */
const MAX_AGENTS = 10_000;
/** Characters of a failed turn's message kept. */
const MAX_MESSAGE = 500;

const FAILED = new Set(['error', 'stalled', 'refused', 'lost']);
const FAILED_OUTCOMES = TURN_OUTCOMES.map((o) => FAILED.has(o));
/** What a failed turn says when its shard sent no message. */
const DEFAULT_MESSAGE: Record<string, string> = {
  error: 'the turn ended with an error',
  stalled: 'its shard stopped answering; the turn was stored as stalled',
  refused: 'refused before it started (unknown agent, full queue, bad request)',
  lost: 'lost with its shard (crashed or stalled)',
};

/** What the live view's snapshot reads besides the dispatch context. */
export interface DashboardFeed {
  rates: TurnRates;
  /** Open turns per shard, running and queued (the ledger). */
  perShard(): { running: number[]; queued: number[] };
}

function bucketOf(ms: number): number {
  if (ms <= FIRST_MS) return 0;
  return Math.min(BUCKETS - 1, Math.ceil(Math.log(ms / FIRST_MS) / LOG_GROWTH));
}

/** The `q` quantile of a histogram, as its bucket's upper bound in ms; 0 when empty. */
function quantile(hist: Uint32Array, count: number, q: number): number {
  if (count === 0) return 0;
  const rank = Math.max(1, Math.ceil(q * count));
  let seen = 0;
  for (let i = 0; i < BUCKETS; i++) {
    seen += hist[i]!;
    if (seen >= rank) return Math.round(FIRST_MS * GROWTH ** i * 1000) / 1000;
  }
  return Math.round(FIRST_MS * GROWTH ** (BUCKETS - 1) * 1000) / 1000;
}

export class TurnRates implements TurnMeterSink {
  readonly #next: TurnMeterSink | null;
  /** Per slot: the unix second it holds, turns, failures, and its histogram (a row of #hist). */
  readonly #second = new Float64Array(SECONDS).fill(-1);
  readonly #turns = new Uint32Array(SECONDS);
  readonly #errors = new Uint32Array(SECONDS);
  readonly #hist = new Uint32Array(SECONDS * BUCKETS);
  readonly #perAgent = new Map<string, { turns: number; errors: number }>();
  /** Newest last; at most MAX_ERRORS. */
  readonly #recent: DashboardError[] = [];
  #total = 0;
  #failed = 0;

  constructor(next: TurnMeterSink | null) {
    this.#next = next;
  }

  turnEnded(t: OpenTurn, outcome: number): void {
    this.#next?.turnEnded(t, outcome);
    const now = Date.now();
    const slot = this.#slot(Math.floor(now / 1000));
    const failed = FAILED_OUTCOMES[outcome] === true;
    this.#turns[slot]!++;
    this.#hist[slot * BUCKETS + bucketOf(performance.now() - t.openedAt)]!++;
    this.#total++;
    const agent = t.req.guest ?? t.req.agent;
    let counts = this.#perAgent.get(agent);
    if (counts === undefined) {
      if (this.#perAgent.size >= MAX_AGENTS) this.#perAgent.delete(this.#perAgent.keys().next().value!);
      this.#perAgent.set(agent, (counts = { turns: 0, errors: 0 }));
    }
    counts.turns++;
    if (!failed) return;
    this.#errors[slot]!++;
    this.#failed++;
    counts.errors++;
    const code = TURN_OUTCOMES[outcome]!;
    const message = (t.error?.message || DEFAULT_MESSAGE[code]!).slice(0, MAX_MESSAGE);
    this.#remember({ time: new Date(now).toISOString(), agent, sender: t.req.sender, code: t.error === undefined ? code : `${code} ${t.error.code}`, message });
  }

  /** A line main logged at warn or above: kept with the failed turns (`log warn`, `log error`), counted in no total. */
  logged(level: string, message: string, fields: Record<string, unknown>): void {
    const str = (v: unknown): string => (typeof v === 'string' ? v : '');
    this.#remember({ time: new Date().toISOString(), agent: str(fields.agent), sender: str(fields.sender), code: `log ${level}`, message: message.slice(0, MAX_MESSAGE) });
  }

  #remember(e: DashboardError): void {
    this.#recent.push(e);
    if (this.#recent.length > MAX_ERRORS) this.#recent.shift();
  }

  /** The ring's slot for `sec`, emptied when it held an older second. */
  #slot(sec: number): number {
    const slot = sec % SECONDS;
    if (this.#second[slot] !== sec) {
      this.#second[slot] = sec;
      this.#turns[slot] = 0;
      this.#errors[slot] = 0;
      this.#hist.fill(0, slot * BUCKETS, (slot + 1) * BUCKETS);
    }
    return slot;
  }

  /** The last SECONDS seconds up to `nowSec`, oldest first. */
  series(nowSec: number): DashboardSecond[] {
    const out: DashboardSecond[] = [];
    for (let sec = nowSec - SECONDS + 1; sec <= nowSec; sec++) {
      const slot = ((sec % SECONDS) + SECONDS) % SECONDS;
      if (this.#second[slot] !== sec) {
        out.push({ t: sec, turns: 0, errors: 0, p50_ms: 0, p99_ms: 0 });
        continue;
      }
      const hist = this.#hist.subarray(slot * BUCKETS, (slot + 1) * BUCKETS);
      const n = this.#turns[slot]!;
      out.push({ t: sec, turns: n, errors: this.#errors[slot]!, p50_ms: quantile(hist, n, 0.5), p99_ms: quantile(hist, n, 0.99) });
    }
    return out;
  }

  /** Turns per second over the last `seconds` whole seconds before `nowSec` (the current one is still filling). */
  rate(nowSec: number, seconds: number): number {
    let n = 0;
    for (let sec = nowSec - seconds; sec < nowSec; sec++) {
      const slot = ((sec % SECONDS) + SECONDS) % SECONDS;
      if (this.#second[slot] === sec) n += this.#turns[slot]!;
    }
    return n / seconds;
  }

  /** p50 and p99 latency (ms) of the turns ended in the last `seconds` seconds, the current one included. */
  latency(nowSec: number, seconds: number): { p50_ms: number; p99_ms: number } {
    const sum = new Uint32Array(BUCKETS);
    let n = 0;
    for (let sec = nowSec - seconds + 1; sec <= nowSec; sec++) {
      const slot = ((sec % SECONDS) + SECONDS) % SECONDS;
      if (this.#second[slot] !== sec) continue;
      n += this.#turns[slot]!;
      for (let i = 0; i < BUCKETS; i++) sum[i]! += this.#hist[slot * BUCKETS + i]!;
    }
    return { p50_ms: quantile(sum, n, 0.5), p99_ms: quantile(sum, n, 0.99) };
  }

  agent(name: string): { turns: number; errors: number } {
    return this.#perAgent.get(name) ?? { turns: 0, errors: 0 };
  }

  /** Forgets the counts of agents not in `registered` (deleted ones). */
  keepAgents(registered: ReadonlySet<string>): void {
    for (const name of this.#perAgent.keys()) if (!registered.has(name)) this.#perAgent.delete(name);
  }

  get totals(): { turns: number; errors: number } {
    return { turns: this.#total, errors: this.#failed };
  }

  /** The latest failed turns, newest first. */
  recentErrors(): DashboardError[] {
    return this.#recent.toReversed();
  }
}
