/**
 * What the lease core (lease-core.ts) and its driver (leases.ts) say to each
 * other: the bucket's entries as a watch delivers them, the rounds' takes,
 * and the losses of partitions.
 */

/** Why a node stopped serving a partition (`bucket`: the bucket it was won in is gone or was replaced). */
export type LossReason = 'lease' | 'rebalance' | 'taken' | 'stop' | 'bucket';

export type Loss = { partition: number; reason: LossReason };

/** A bucket entry as a watch delivers it; `text` is read only for a partition's entry that was put. */
export interface BucketEntry {
  key: string;
  revision: number;
  deleted: boolean;
  /** The watch's mark that the entry came after the bucket as it stood when the watch began. */
  isUpdate: boolean;
  text: () => string;
}

export interface EntryOutcome {
  lost: Loss[];
  /** A partition's entry that is not an owner record (it counts as unowned). */
  malformed: boolean;
}

/** A partition to take by compare-and-set: create it when `revision` is null, else update that revision. */
export interface Take {
  partition: number;
  revision: number | null;
}

/** One ownership round in progress: the live set and targets it decided on, and how far its takes got. */
export interface Round {
  readonly live: readonly string[];
  readonly targets: readonly string[];
  next: number;
}

export type RoundStart =
  | { kind: 'skip' }
  | { kind: 'watch' }
  | { kind: 'expired'; lost: Loss[] }
  | { kind: 'round'; round: Round; releases: { partition: number; revision: number }[]; lost: Loss[] };

export type WatchProgress = 'none' | 'waiting' | 'own-seen' | 'caught-up';

export interface LeaseCoreOptions {
  node: string;
  partitions: number;
  leaseMs: number;
  /** A monotonic clock in milliseconds (performance.now in the driver). */
  now: () => number;
}

/** The owner an entry's text names: null for a released entry, undefined when it is not an owner record. */
export function ownerOf(text: string): string | null | undefined {
  try {
    const value = JSON.parse(text) as { owner?: unknown } | null;
    if (value === null) return undefined;
    return typeof value.owner === 'string' ? value.owner : null;
  } catch {
    return undefined;
  }
}
