/**
 * Histograms whose cells are plain arrays, summed where things happen and
 * read only when scraped. Observing costs a bucket search and three
 * additions; prom-client's own Histogram.observe validates and hashes its
 * labels on every call, which on main's per-turn path was most of what the
 * metrics cost a turn. prom-client's registry renders any object with `get`.
 */
import type { Registry } from 'prom-client';
import { bucketOf } from '../../shared/threads/call-tally.ts';

/** One label set's cells: observations per bound (not cumulative; the last cell is past every bound), their sum and count. */
export interface Series {
  labels: Record<string, string>;
  buckets: Float64Array;
  sum: number;
  count: number;
}

/** An unlabelled histogram's cells, observed in place. */
export class HistogramCells implements Series {
  readonly labels: Record<string, string> = {};
  readonly buckets: Float64Array;
  sum = 0;
  count = 0;
  readonly #bounds: readonly number[];

  constructor(bounds: readonly number[]) {
    this.#bounds = bounds;
    this.buckets = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    this.buckets[bucketOf(this.#bounds, value)]!++;
    this.sum += value;
    this.count++;
  }
}

/** Registers histogram `name`, rendered at each scrape from what `read` yields (series with the same labels are summed). */
export function pulledHistogram(registry: Registry, name: string, help: string, bounds: readonly number[], read: () => Iterable<Series>): void {
  registry.registerMetric({
    name,
    get: async () => {
      const values: { metricName: string; labels: Record<string, string | number>; value: number }[] = [];
      const merged = new Map<string, Series>();
      for (const s of read()) {
        const key = JSON.stringify(s.labels);
        const m = merged.get(key) ?? { labels: s.labels, buckets: new Float64Array(bounds.length + 1), sum: 0, count: 0 };
        s.buckets.forEach((v, i) => (m.buckets[i]! += v));
        m.sum += s.sum;
        m.count += s.count;
        merged.set(key, m);
      }
      for (const s of merged.values()) {
        let cumulative = 0;
        bounds.forEach((le, i) => {
          cumulative += s.buckets[i]!;
          values.push({ metricName: `${name}_bucket`, labels: { ...s.labels, le }, value: cumulative });
        });
        values.push({ metricName: `${name}_bucket`, labels: { ...s.labels, le: '+Inf' }, value: s.count });
        values.push({ metricName: `${name}_sum`, labels: s.labels, value: s.sum });
        values.push({ metricName: `${name}_count`, labels: s.labels, value: s.count });
      }
      return { name, help, type: 'histogram', values, aggregator: 'sum' };
    },
  } as unknown as Parameters<Registry['registerMetric']>[0]);
}
