/**
 * Nodes racing for partitions on a fake bucket (lease-fake-cluster.ts):
 * after every step of the clock, no partition is served by two nodes, and
 * fence tokens only grow, through a join, a cut-off node, a wiped bucket
 * and a new cluster name.
 */
import { describe, expect, it } from 'vitest';
import { FakeCluster, PARTITIONS, targetsOf } from '../helpers/lease-fake-cluster.ts';

describe('lease core: two nodes never serve one partition', () => {
  it('hands partitions over on a join (not: the old owner serving on after the new one took them)', () => {
    const cluster = new FakeCluster();
    cluster.join('a');
    cluster.runUntil(1_000);
    expect(cluster.served()).toEqual({ a: [0, 1, 2, 3] });
    cluster.join('b');
    cluster.runUntil(3_000);
    expect(cluster.served()).toEqual({ a: targetsOf('a', ['a', 'b']), b: targetsOf('b', ['a', 'b']) });
    expect(cluster.overlaps).toEqual([]);
  });

  it('a node cut off from NATS, its timers late, stops serving before the other takes over (not: serving past its lease)', () => {
    const cluster = new FakeCluster();
    cluster.join('a');
    cluster.join('b');
    cluster.runUntil(2_000);
    expect(cluster.served().a).toEqual(targetsOf('a', ['a', 'b']));
    cluster.cut.add('a');
    cluster.runUntil(4_000);
    expect(cluster.served()).toEqual({ a: [], b: [0, 1, 2, 3] });
    expect(cluster.overlaps).toEqual([]);
    // Back: a heartbeats again, watches anew, and the partitions spread over both again.
    cluster.cut.delete('a');
    cluster.runUntil(7_000);
    expect(cluster.served()).toEqual({ a: targetsOf('a', ['a', 'b']), b: targetsOf('b', ['a', 'b']) });
    expect(cluster.overlaps).toEqual([]);
  });
});


describe('lease core: fences through a lost bucket and a new cluster name', () => {
  it('two nodes serve every partition again after the bucket is wiped, under tokens that only grow, never both one partition', () => {
    const cluster = new FakeCluster();
    cluster.join('a');
    cluster.join('b');
    cluster.runUntil(2_000);
    const spread = { a: targetsOf('a', ['a', 'b']), b: targetsOf('b', ['a', 'b']) };
    expect(cluster.served()).toEqual(spread);
    const before = cluster.currentTokens();
    cluster.wipe();
    cluster.runUntil(2_300);
    expect(cluster.served()).toEqual({ a: [], b: [] });
    cluster.runUntil(6_000);
    expect(cluster.served()).toEqual(spread);
    const after = cluster.currentTokens();
    for (let p = 0; p < PARTITIONS; p++) {
      expect(after[p]).toBeGreaterThan(before[p]!);
      const history = cluster.tokens.get(p)!;
      expect(history).toEqual([...history].sort((x, y) => x - y));
      expect(new Set(history).size).toBe(history.length);
    }
    expect(cluster.overlaps).toEqual([]);
  });

  it('a cluster on a new bucket serves though the store’s fences are far past its revisions (not: comparing revisions across buckets)', () => {
    const cluster = new FakeCluster();
    cluster.fenceAll({ epoch: 1, revision: 5_000, token: 1_100 }); // an earlier cluster's, under another name
    cluster.wipe(); // the new name's bucket: revisions from 1, a new epoch
    cluster.join('a');
    cluster.join('b');
    cluster.runUntil(3_000);
    expect(cluster.served()).toEqual({ a: targetsOf('a', ['a', 'b']), b: targetsOf('b', ['a', 'b']) });
    expect(cluster.currentTokens()).toEqual([1_101, 1_101, 1_101, 1_101]);
    expect(cluster.overlaps).toEqual([]);
  });
});
