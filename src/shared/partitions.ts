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
 * A partition's fencing token: what the store issued to the claim of the
 * owner (storage/postgres/fences.ts), one more than the partition's last, so
 * a later owner always holds a larger token, whatever became of the NATS
 * bucket, and the store refuses a write carrying an older one.
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

/**
 * The node's partition tokens in a SharedArrayBuffer, written by main (the
 * lease manager's thread) and read by every shard's store before each write:
 * a Float64Array of 1 + partitions cells. Cell 0 is the end of the node's
 * lease (epoch ms, as performance.timeOrigin + performance.now() tells it);
 * cell 1 + P is the token P is served with, 0 while it is not. A shard thus
 * stops writing when the lease ends even if main's event loop is too busy to
 * clear the tokens in time.
 */
export class SharedFences implements FenceSource {
  readonly partitions: number;
  readonly buffer: SharedArrayBuffer;
  readonly #cells: Float64Array;

  constructor(partitions: number, buffer: SharedArrayBuffer = new SharedArrayBuffer(8 * (partitions + 1))) {
    if (buffer.byteLength !== 8 * (partitions + 1)) throw new Error(`a fence buffer for ${partitions} partitions must hold ${8 * (partitions + 1)} bytes, not ${buffer.byteLength}`);
    this.partitions = partitions;
    this.buffer = buffer;
    this.#cells = new Float64Array(buffer);
  }

  tokenOf(partition: number): number | null {
    if (partition < 0 || partition >= this.partitions) return null;
    if (performance.timeOrigin + performance.now() >= this.#cells[0]!) return null;
    const token = this.#cells[1 + partition]!;
    return token > 0 ? token : null;
  }

  /** The lease's end, in epoch ms. */
  setValidUntil(epochMs: number): void {
    this.#cells[0] = epochMs;
  }

  /** `token` for a partition now served; null once it is not. */
  set(partition: number, token: number | null): void {
    this.#cells[1 + partition] = token ?? 0;
  }
}
