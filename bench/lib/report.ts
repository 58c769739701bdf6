/**
 * Collects result rows and compares systems round by round: each round
 * measures every system once, alternating the order, and the table keeps the
 * median per system and agentd's spread.
 */
import { median, spread } from './load.ts';

export interface Row {
  suite: string;
  name: string;
  unit: string;
  value: number;
  /** Empty where there is no anchor. */
  anchor: string;
  anchor_value: number | null;
  /** value / anchor_value: lower is better for latency and memory, higher for rates. */
  ratio: number | null;
  /** (max - min) / median of agentd's rounds. */
  spread: number;
  /** Free text: why a row is missing an anchor, whether observers lagged, etc. */
  note?: string;
}

export class Report {
  readonly rows: Row[] = [];
  /** Set per suite by bench/run.ts (bench/lib/plan.ts). */
  rounds: number;

  constructor(rounds: number) {
    this.rounds = rounds;
  }

  static progress(msg: string): void {
    process.stderr.write(`[bench] ${msg}\n`);
  }

  add(row: Omit<Row, 'ratio'>): void {
    this.rows.push({ ...row, ratio: row.anchor_value === null || row.anchor_value === 0 ? null : row.value / row.anchor_value });
  }

  /**
   * Measures `systems` (the first is agentd) round by round. `measure` returns one value per metric.
   * Every other system becomes an anchor row beside agentd's figure.
   */
  async compare<S extends { name: string }>(
    suite: string,
    metrics: { name: string; unit: string }[],
    systems: S[],
    measure: (sys: S) => Promise<number[]>,
  ): Promise<void> {
    const samples = new Map<string, number[][]>(systems.map((s) => [s.name, metrics.map(() => [])]));
    for (let round = 0; round < this.rounds; round++) {
      for (const sys of round % 2 === 0 ? systems : [...systems].reverse()) {
        const values = await measure(sys);
        values.forEach((v, k) => samples.get(sys.name)![k]!.push(v));
      }
      Report.progress(`${suite}: ${metrics.map((m) => m.name).join(', ')}: round ${round + 1}/${this.rounds}`);
    }
    const [ours, ...anchors] = systems;
    metrics.forEach((m, k) => {
      const mine = samples.get(ours!.name)![k]!;
      const value = median(mine);
      for (const a of anchors) {
        this.add({ suite, name: m.name, unit: m.unit, value, anchor: a.name, anchor_value: median(samples.get(a.name)![k]!), spread: spread(mine) });
      }
      if (anchors.length === 0) this.add({ suite, name: m.name, unit: m.unit, value, anchor: '', anchor_value: null, spread: spread(mine) });
    });
  }

  table(): string {
    const fmt = (v: number | null): string => (v === null ? '' : Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(1));
    return [
      '| suite | measure | unit | agentd | anchor | anchor value | ratio | spread |',
      '|---|---|---|---|---|---|---|---|',
      ...this.rows.map(
        (r) =>
          `| ${r.suite} | ${r.name}${r.note ? ` (${r.note})` : ''} | ${r.unit} | ${fmt(r.value)} | ${r.anchor || '—'} | ${fmt(r.anchor_value)} | ${r.ratio === null ? '' : r.ratio.toFixed(2)} | ${(r.spread * 100).toFixed(0)}% |`,
      ),
    ].join('\n');
  }
}
