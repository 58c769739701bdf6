/**
 * The metrics' per-turn bookkeeping: histograms kept in plain cells render
 * exactly as prom-client's own Histogram would, and the tallies' last-used
 * shortcut never hands one kind of call another's tally.
 */
import { describe, expect, it } from 'vitest';
import { Histogram, Registry } from 'prom-client';
import { HistogramCells, pulledHistogram } from '../../src/main/metrics/pulled-histogram.ts';
import { Tallies } from '../../src/shared/threads/call-tally.ts';

const BOUNDS = [0.001, 0.01, 0.1, 1];
// Below, on and past the bounds: a value equal to a bound falls in that bound's bucket.
const VALUES = [0, 0.0005, 0.001, 0.002, 0.01, 0.5, 1, 7, 120];

describe('pulledHistogram', () => {
  it('renders the same exposition as a prom-client Histogram fed the same values', async () => {
    const theirs = new Registry();
    const h = new Histogram({ name: 'x_seconds', help: 'x', buckets: BOUNDS, registers: [theirs] });
    const ours = new Registry();
    const cells = new HistogramCells(BOUNDS);
    pulledHistogram(ours, 'x_seconds', 'x', BOUNDS, () => [cells]);
    for (const v of VALUES) {
      h.observe(v);
      cells.observe(v);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.metrics()).toContain('x_seconds_bucket{le="0.001"} 3\n');
  });

  it('renders every bucket at zero before anything is observed', async () => {
    const theirs = new Registry();
    new Histogram({ name: 'x_seconds', help: 'x', buckets: BOUNDS, registers: [theirs] });
    const ours = new Registry();
    pulledHistogram(ours, 'x_seconds', 'x', BOUNDS, () => [new HistogramCells(BOUNDS)]);
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });
});

describe('Tallies', () => {
  it('keeps a tally per kind, via, name and status however the calls alternate', () => {
    const t = new Tallies();
    for (let i = 0; i < 3; i++) {
      t.add('model', 'echo', 'echo', 'ok', 0.001);
      t.add('model', 'echo', 'echo', 'error', 0.001);
      t.add('model', 'other', 'echo', 'ok', 0.001);
      t.add('model', 'echo', 'big', 'ok', 0.001);
      t.add('tool', '', 'echo', 'ok', 0.001);
      t.add('commit_batch', '', '', 'ok', 0.001);
    }
    const got = [...t.values()].map((x) => `${x.kind}/${x.via}/${x.name}/${x.status}=${x.n}`).sort();
    expect(got).toEqual(['commit_batch///ok=3', 'model/echo/big/ok=3', 'model/echo/echo/error=3', 'model/echo/echo/ok=3', 'model/other/echo/ok=3', 'tool//echo/ok=3']);
  });

  it('starts afresh after a take: a tally taken is never added to again', () => {
    const t = new Tallies();
    t.add('model', 'echo', 'echo', 'ok', 0.001);
    const [first] = t.take();
    t.add('model', 'echo', 'echo', 'ok', 0.001);
    expect(first!.n).toBe(1);
    expect(t.take()[0]!.n).toBe(1);
  });
});
