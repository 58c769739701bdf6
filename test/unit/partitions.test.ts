import { describe, expect, it } from 'vitest';
import { pairHash } from '../../src/shared/hash.ts';
import { assignPartitions, DEFAULT_PARTITIONS, fenceFor, partitionOf, SharedFences } from '../../src/shared/partitions.ts';

const count = (owners: readonly string[]) => owners.reduce<Record<string, number>>((c, o) => ({ ...c, [o]: (c[o] ?? 0) + 1 }), {});

describe('partitionOf', () => {
  it('is the pair hash modulo the partition count, so every node and thread agrees on it', () => {
    for (const sender of ['u1', 'héllo', '日本語', '']) {
      expect(partitionOf('assistant', sender, DEFAULT_PARTITIONS)).toBe(pairHash('assistant', sender) % DEFAULT_PARTITIONS);
    }
  });
});

describe('assignPartitions', () => {
  it('spreads partitions evenly over the live nodes, whatever order they are listed in', () => {
    for (const nodes of [['a'], ['a', 'b'], ['a', 'b', 'c'], ['n1', 'n2', 'n3', 'n4', 'n5']]) {
      const owners = assignPartitions(256, nodes);
      expect(owners).toHaveLength(256);
      const counts = Object.values(count(owners));
      expect(counts).toHaveLength(nodes.length);
      const quota = Math.ceil(256 / nodes.length);
      expect(Math.max(...counts), nodes.join()).toBeLessThanOrEqual(quota);
      expect(Math.min(...counts), nodes.join()).toBeGreaterThanOrEqual(256 - (nodes.length - 1) * quota);
      expect(assignPartitions(256, [...nodes].reverse())).toEqual(owners);
    }
    expect(assignPartitions(256, [])).toEqual([]);
  });

  it('moves the partitions of a node that leaves, and keeps most of the others where they were', () => {
    const before = assignPartitions(256, ['a', 'b', 'c']);
    const after = assignPartitions(256, ['a', 'c']);
    let kept = 0;
    let others = 0;
    for (let p = 0; p < 256; p++) {
      expect(after[p]).not.toBe('b');
      if (before[p] === 'b') continue;
      others++;
      if (after[p] === before[p]) kept++;
    }
    expect(kept / others).toBeGreaterThan(0.5);
  });
});

describe('fenceFor', () => {
  it('gives the token held for the pair’s partition, and refuses a pair whose partition this node does not serve', () => {
    const p = partitionOf('a', 'u', 8);
    const source = { partitions: 8, tokenOf: (q: number) => (q === p ? 42 : null) };
    expect(fenceFor(source, 'a', 'u')).toEqual({ partition: p, token: 42 });
    const other = ['v', 'w', 'x', 'y', 'z'].find((s) => partitionOf('a', s, 8) !== p)!;
    expect(() => fenceFor(source, 'a', other)).toThrow(/does not own cluster partition \d+ .*the write was refused/);
  });
});

describe('SharedFences', () => {
  it('gives another thread the tokens main sets, and none once the lease ended', async () => {
    const main = new SharedFences(8);
    main.setValidUntil(performance.timeOrigin + performance.now() + 60_000);
    main.set(3, 41);
    // What a shard builds from the same buffer (ShardInit.fences).
    const shard = new SharedFences(8, main.buffer);
    expect(shard.tokenOf(3)).toBe(41);
    expect(shard.tokenOf(4)).toBeNull();
    expect(shard.tokenOf(8)).toBeNull();
    expect(fenceFor(shard, ...pairIn(3, 8))).toEqual({ partition: 3, token: 41 });
    main.set(3, null);
    expect(shard.tokenOf(3)).toBeNull();
    expect(() => fenceFor(shard, ...pairIn(3, 8))).toThrow(/does not own cluster partition 3/);
    main.set(3, 42);
    main.setValidUntil(performance.timeOrigin + performance.now() - 1);
    expect(shard.tokenOf(3)).toBeNull();
  });

  it('refuses a buffer of the wrong size', () => {
    expect(() => new SharedFences(8, new SharedArrayBuffer(8))).toThrow(/must hold 72 bytes/);
  });
});

/** An (agent, sender) pair of `partition`. */
function pairIn(partition: number, partitions: number): [string, string] {
  for (let i = 0; ; i++) if (partitionOf('assistant', `s${i}`, partitions) === partition) return ['assistant', `s${i}`];
}
