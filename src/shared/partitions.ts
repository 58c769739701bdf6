/**
 * Cluster partitions: which partition a pair belongs to, and which live node
 * should own each partition. Every node computes both from the same inputs
 * (the pair hash of hash.ts, the sorted set of live node names), so nodes
 * that see the same live set agree on every owner without asking each other.
 */
import { fnv1a32, pairHash } from './hash.ts';

/** Partitions when the cluster config names none. Fixed for the life of a cluster: a pair's partition must never move. */
export const DEFAULT_PARTITIONS = 256;

/** Node names are one key token of the cluster's bucket and one subject token: what NATS subjects and file names both allow. */
export const NODE_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * A partition's fencing token: the revision of the key-value entry that gave
 * its owner the partition. Revisions only grow, so a later owner always holds
 * a larger token, and the store refuses a write carrying a smaller one.
 */
export interface Fence {
  partition: number;
  token: number;
}

/** The partition of a pair: the shard hash modulo the partition count. */
export function partitionOf(agent: string, sender: string, partitions: number): number {
  return pairHash(agent, sender) % partitions;
}

const enc = new TextEncoder();

/** The rendezvous weight of `node` for `partition`: a stable hash of both. */
function weight(partition: number, node: string): number {
  return fnv1a32(enc.encode(`${partition}\u0000${node}`));
}

/**
 * The owner each partition should have, given the live nodes: rendezvous
 * hashing (each partition prefers nodes in the order of a hash of the pair
 * partition/node) bounded by a quota, so the spread is even (no node holds
 * more than ceil(partitions / nodes)) and a node joining or leaving moves
 * few partitions besides those it takes or gives up. Deterministic: the
 * order of `nodes` does not matter. Returns [] for no nodes.
 */
export function assignPartitions(partitions: number, nodes: readonly string[]): string[] {
  const live = [...new Set(nodes)].sort();
  if (live.length === 0) return [];
  const quota = Math.ceil(partitions / live.length);
  const held = new Map(live.map((n) => [n, 0]));
  const owners = new Array<string>(partitions);
  for (let p = 0; p < partitions; p++) {
    let best: string | null = null;
    let bestWeight = -1;
    for (const n of live) {
      if (held.get(n)! >= quota) continue;
      const w = weight(p, n);
      if (w > bestWeight || (w === bestWeight && best !== null && n < best)) {
        best = n;
        bestWeight = w;
      }
    }
    owners[p] = best!;
    held.set(best!, held.get(best!)! + 1);
  }
  return owners;
}

/**
 * What a store asks before each write in cluster mode: the token this node
 * holds for a partition, or null while it does not serve that partition.
 */
export interface FenceSource {
  readonly partitions: number;
  tokenOf(partition: number): number | null;
}

/** The fence a write for the pair must carry; throws, naming the partition, when this node does not serve it. */
export function fenceFor(source: FenceSource, agent: string, sender: string): Fence {
  const partition = partitionOf(agent, sender, source.partitions);
  const token = source.tokenOf(partition);
  if (token === null) throw new Error(`this node does not own cluster partition ${partition} (of ${agent}/${sender}); the write was refused`);
  return { partition, token };
}
