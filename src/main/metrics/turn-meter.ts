/**
 * Turn metrics, counted on main as turns end (the ledger tells it): per
 * agent and outcome, and two latency histograms. A turn's end costs a map
 * lookup, two bucket searches and a few additions here; prom-client's label
 * handling runs only when the metrics are scraped.
 */
import { Counter, type Registry } from 'prom-client';
import { TURN_OUTCOMES } from '../../shared/threads/shard-messages.ts';
import type { OpenTurn, TurnMeterSink } from '../turn-ledger.ts';
import { HistogramCells, pulledHistogram } from './pulled-histogram.ts';

/** Seconds: from a fraction of a millisecond (echo) to minutes (a model calling tools). */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export class TurnMeter implements TurnMeterSink {
  /** Ended turns per agent, one cell per outcome. */
  readonly #ended = new Map<string, Float64Array>();
  readonly #toStart = new HistogramCells(LATENCY_BUCKETS);
  readonly #toEnd = new HistogramCells(LATENCY_BUCKETS);

  constructor(registry: Registry) {
    const ended = this.#ended;
    new Counter({
      name: 'agentd_turns_total',
      help: 'Turns ended, by agent and outcome (a stop reason; refused: answered with an error before it started; lost: with its shard)',
      labelNames: ['agent', 'outcome'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [agent, counts] of ended) counts.forEach((n, i) => n > 0 && this.inc({ agent, outcome: TURN_OUTCOMES[i]! }, n));
      },
    });
    const toStart = this.#toStart;
    const toEnd = this.#toEnd;
    pulledHistogram(registry, 'agentd_turn_start_seconds', 'From a turn reaching main to its start on its shard (its first frame): routing and waiting behind the conversation\'s earlier turns', LATENCY_BUCKETS, () => [toStart]);
    pulledHistogram(registry, 'agentd_turn_duration_seconds', 'From a turn reaching main to its last frame', LATENCY_BUCKETS, () => [toEnd]);
  }

  turnEnded(t: OpenTurn, outcome: number): void {
    const agent = t.req.guest ?? t.req.agent;
    let counts = this.#ended.get(agent);
    if (counts === undefined) this.#ended.set(agent, (counts = new Float64Array(TURN_OUTCOMES.length)));
    counts[outcome]!++;
    const now = performance.now();
    if (t.startedAt > 0) this.#toStart.observe((t.startedAt - t.openedAt) / 1000);
    this.#toEnd.observe((now - t.openedAt) / 1000);
  }
}
