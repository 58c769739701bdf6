/**
 * The decisions of partition ownership, without NATS or timers: who is live,
 * who owns which partition, when this node serves and when it stops. The
 * driver (leases.ts) feeds it the bucket's entries, its writes' results and
 * timer ticks, and performs what it decides; time is an injected clock.
 *
 * A node's heartbeat is the lease on every partition it owns. Nodes never
 * compare wall clocks: this node times the others by when it *received*
 * their last heartbeat, and counts a node silent for GONE_AFTER of a lease
 * as gone. It serves only until LEASE_SAFETY of a lease after it *sent* its
 * last acknowledged heartbeat, which is earlier, so a node cut off from NATS
 * stops serving before anyone may take its partitions over.
 */
import { assignPartitions } from '../shared/partitions.ts';
import { ownerOf, type BucketEntry, type EntryOutcome, type LeaseCoreOptions, type Loss, type LossReason, type Round, type RoundStart, type Take, type WatchProgress } from './lease-types.ts';

export { ownerOf, type BucketEntry, type EntryOutcome, type LeaseCoreOptions, type Loss, type LossReason, type Round, type RoundStart, type Take, type WatchProgress } from './lease-types.ts';

/** The share of `leaseMs`, from the send of its last acknowledged heartbeat, a node serves for. */
export const LEASE_SAFETY = 0.6;

/**
 * The share of `leaseMs` without a heartbeat after which others count a node
 * as gone: enough after LEASE_SAFETY for a cut-off node to have stopped, and
 * early enough that the takeover round ends within `leaseMs` of a death.
 */
export const GONE_AFTER = 0.8;

/** Heartbeats per lease; ownership rounds run as often (sooner when another node's lease is about to run out). */
export const HEARTBEATS_PER_LEASE = 4;

interface Seen {
  revision: number;
  /** The clock's time when this node received it. */
  at: number;
}

/** A node's heartbeat as seen: also whether it says its node is draining (`drain`: no partition targets it). */
interface Heard extends Seen {
  draining: boolean;
}

/** Whether a heartbeat's record says its node is draining. */
function drainingIn(text: string): boolean {
  try {
    return (JSON.parse(text) as { draining?: unknown }).draining === true;
  } catch {
    return false;
  }
}

interface PartEntry extends Seen {
  owner: string | null;
}

const sameNodes = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((name, i) => name === b[i]);

export class LeaseCore {
  readonly node: string;
  readonly partitions: number;
  readonly leaseMs: number;
  readonly #now: () => number;
  readonly #nodes = new Map<string, Heard>();
  readonly #parts = new Map<number, PartEntry>();
  /** The partitions this node serves: the revision of the entry that gave it each, and the token the store issued. */
  readonly #served = new Map<number, { revision: number; token: number }>();
  /** No take before this: the bucket was lost, and a node may still serve under the one gone (bucketLost). */
  #takesFrom = 0;
  /** Until when this node may serve; 0 until its first heartbeat is acknowledged. */
  #validUntil = 0;
  /** The revision of the last acknowledged heartbeat: a new watch has caught up once it delivered it. */
  #lastBeat = 0;
  /**
   * Since when this node could see the bucket: its first heartbeat
   * acknowledged, or the first acknowledged after its lease ran out. A node
   * cut off from NATS received nobody's heartbeats, so silence from before
   * this moment does not count against the others (#heardAt).
   */
  #sightSince = 0;
  /** When this node last knew it could see: the send of its last heartbeat acknowledged before its lease ran out. */
  #blindFrom = 0;
  #watching = false;
  /** The watch's catch-up: the heartbeat revision it must deliver, when it did, and whether an update came. */
  #watchFor = 0;
  #ownSeenAt: number | null = null;
  #sawUpdate = false;
  #stopped = false;

  constructor(options: LeaseCoreOptions) {
    this.node = options.node;
    this.partitions = options.partitions;
    this.leaseMs = options.leaseMs;
    this.#now = options.now;
  }

  get stopped(): boolean { return this.#stopped; }

  /** `drain`: from now on no partition targets this node, so its rounds give up all it serves (its heartbeat tells the others). */
  #draining = false;
  get draining(): boolean { return this.#draining; }
  drain(): void { this.#draining = true; }

  /** The live nodes partitions may target: those not draining (all of them, should every one be draining). */
  #assignable(live: readonly string[]): string[] {
    const open = live.filter((n) => (n === this.node ? !this.#draining : this.#nodes.get(n)?.draining !== true));
    return open.length > 0 ? open : [...live];
  }

  /** Until when (clock time) this node may serve without another acknowledged heartbeat. */
  get validUntil(): number {
    return this.#validUntil;
  }

  #valid(): boolean { return this.#now() < this.#validUntil; }

  /** The token this node serves `partition` with, or null. */
  tokenOf(partition: number): number | null {
    if (!this.#valid()) return null;
    return this.#served.get(partition)?.token ?? null;
  }

  /** The partitions this node serves now, ascending. */
  served(): number[] {
    if (!this.#valid()) return [];
    return [...this.#served.keys()].sort((a, b) => a - b);
  }

  /** The owner each partition has in the bucket, as this node last saw it (null: none). */
  owners(): (string | null)[] {
    return Array.from({ length: this.partitions }, (_, p) => this.#parts.get(p)?.owner ?? null);
  }

  /** The nodes this node counts as live now (itself only while its lease is valid), sorted. */
  liveNodes(): string[] {
    const now = this.#now();
    const live: string[] = [];
    for (const [name, seen] of this.#nodes) {
      if (name === this.node ? now < this.#validUntil : now - this.#heardAt(seen) < this.leaseMs * GONE_AFTER) live.push(name);
    }
    return live.sort();
  }

  /**
   * When this node last heard from another, for judging it gone: its last
   * heartbeat's arrival, but for a node still live when this one went blind,
   * no earlier than since when this one could see again. Back from an
   * outage, a node would otherwise count every other node as gone (their
   * heartbeats could not reach it) and take partitions their renewed leases
   * still cover; a node already gone before stays gone.
   */
  #heardAt(seen: Seen): number {
    const liveWhenBlinded = seen.at + this.leaseMs * GONE_AFTER > this.#blindFrom;
    return liveWhenBlinded ? Math.max(seen.at, this.#sightSince) : seen.at;
  }

  /** Every node with a heartbeat in the bucket: whether it counts as live, the partitions the bucket gives it, its lease's age. */
  nodeStats(): { node: string; live: boolean; draining: boolean; partitions: number; lease_age_ms: number }[] {
    const now = this.#now();
    const live = new Set(this.liveNodes());
    const owned = new Map<string, number>();
    for (const owner of this.owners()) if (owner !== null) owned.set(owner, (owned.get(owner) ?? 0) + 1);
    return [...this.#nodes.entries()]
      .map(([node, seen]) => ({ node, live: live.has(node), draining: node === this.node ? this.#draining : seen.draining, partitions: owned.get(node) ?? 0, lease_age_ms: Math.max(0, Math.round(now - seen.at)) }))
      .sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  }

  /** Milliseconds this node may still serve without another acknowledged heartbeat (0 once its lease ran out). */
  leaseLeftMs(): number {
    return Math.max(0, Math.round(this.#validUntil - this.#now()));
  }

  /**
   * This node's heartbeat sent at `sentAt` was acknowledged with `revision`:
   * the lease extends from the send. Whether the lease had lapsed is judged
   * now, at the acknowledgement: one sent before the lapse can arrive after
   * it, and then this node may not have seen the bucket since it last
   * renewed. Returns the lease's end.
   */
  heartbeatAcked(sentAt: number, revision: number): number {
    const now = this.#now();
    if (now >= this.#validUntil) {
      this.#blindFrom = this.#validUntil - this.leaseMs * LEASE_SAFETY;
      this.#sightSince = now;
    }
    this.#lastBeat = Math.max(this.#lastBeat, revision);
    this.#validUntil = Math.max(this.#validUntil, sentAt + this.leaseMs * LEASE_SAFETY);
    return this.#validUntil;
  }

  /** The lease's timer fired: once it ran out with no heartbeat extending it, this node serves nothing. */
  expire(): Loss[] {
    return this.#valid() ? [] : this.#dropAll('lease');
  }

  /**
   * A watch of the whole bucket began. It counts as caught up once it has
   * delivered this node's last acknowledged heartbeat and the rest of the
   * bucket as it stood when it began (its last entry is the first marked
   * `isUpdate`): another node's heartbeat can come after this one's while
   * its partitions' entries come before, and a round could see those
   * partitions owned by a node it did not know, and take them. Should that
   * end never be marked, one lease after this node's heartbeat arrived is
   * enough.
   */
  watchOpened(): void {
    this.#watching = true;
    this.#watchFor = this.#lastBeat;
    this.#ownSeenAt = null;
    this.#sawUpdate = false;
  }

  watchProgress(): WatchProgress {
    if (!this.#watching) return 'none';
    if (this.#ownSeenAt === null) return 'waiting';
    if (this.#sawUpdate || this.#now() >= this.#ownSeenAt + this.leaseMs) return 'caught-up';
    return 'own-seen';
  }

  /**
   * A watch ended: this node can no longer see others take its partitions,
   * so it serves nothing until it watches again. One not `current` (a newer
   * one was opened since: the bucket was lost) changes nothing.
   */
  watchEnded(current: boolean): Loss[] {
    if (!current) return [];
    this.#watching = false;
    return this.#stopped ? [] : this.#dropAll('lease');
  }

  /**
   * The bucket this node watched is gone or was replaced (NATS lost its
   * store): its entries and revisions mean nothing in the next one. Serves
   * nothing, forgets them, and watches anew. Takes nothing for GONE_AFTER of
   * a lease: a node serving under the bucket gone heartbeats there no more,
   * so by then its lease has ended, while the next bucket holds no entry of
   * what it served.
   */
  bucketLost(): Loss[] {
    this.#watching = false;
    this.#parts.clear();
    // Revisions start again: a heartbeat of the next bucket is news whatever its revision.
    for (const seen of this.#nodes.values()) seen.revision = -1;
    this.#lastBeat = 0;
    this.#takesFrom = this.#now() + this.leaseMs * GONE_AFTER;
    return this.#stopped ? [] : this.#dropAll('bucket');
  }

  /** The watch delivered `e`. */
  entrySeen(e: BucketEntry): EntryOutcome {
    const outcome = this.#observe(e);
    if (this.#watching) {
      if (this.#ownSeenAt === null && e.key === `node.${this.node}` && e.revision >= this.#watchFor) this.#ownSeenAt = this.#now();
      this.#sawUpdate ||= e.isUpdate;
    }
    return outcome;
  }

  #observe(e: BucketEntry): EntryOutcome {
    const none: EntryOutcome = { lost: [], malformed: false };
    if (e.key.startsWith('node.')) {
      const name = e.key.slice('node.'.length);
      if (e.deleted) this.#nodes.delete(name);
      // A heartbeat delivered again (a watch opened anew) is no news of its node: its arrival time stays.
      else if (this.#nodes.get(name)?.revision !== e.revision) this.#nodes.set(name, { revision: e.revision, at: this.#now(), draining: drainingIn(e.text()) });
      return none;
    }
    if (!e.key.startsWith('part.')) return none;
    const p = Number(e.key.slice('part.'.length));
    if (!Number.isInteger(p) || p < 0 || p >= this.partitions) return none;
    const known = this.#parts.get(p);
    if (known !== undefined && known.revision >= e.revision) return none;
    // Not written by agentd: the partition counts as unowned, and the next take replaces the entry.
    const owner = e.deleted ? null : ownerOf(e.text());
    this.#parts.set(p, { owner: owner ?? null, revision: e.revision, at: this.#now() });
    const held = this.#served.get(p);
    const lost = held !== undefined && e.revision > held.revision ? this.#drop(p, 'taken') : [];
    return { lost, malformed: owner === undefined };
  }

  /**
   * Starts a round: gives up what no longer targets this node (each to be
   * drained and released by the driver), then takes come one by one from
   * nextTake. 'watch': the bucket is not watched; watch it, then start
   * again. 'skip': nothing to do (stopped, or the watch has not caught up).
   */
  beginRound(): RoundStart {
    if (this.#stopped) return { kind: 'skip' };
    if (!this.#watching) return this.#valid() ? { kind: 'watch' } : { kind: 'skip' };
    // Before the watch has delivered the bucket, a round would take what others own unseen.
    if (this.watchProgress() !== 'caught-up') return { kind: 'skip' };
    if (!this.#valid()) return { kind: 'expired', lost: this.#dropAll('lease') };
    const live = this.liveNodes();
    const targets = assignPartitions(this.partitions, this.#assignable(live));
    const releases: { partition: number; revision: number }[] = [];
    const lost: Loss[] = [];
    for (const [partition, { revision }] of [...this.#served]) {
      if (targets[partition] === this.node) continue;
      releases.push({ partition, revision });
      lost.push(...this.#drop(partition, 'rebalance'));
    }
    return { kind: 'round', round: { live, targets, next: 0 }, releases, lost };
  }

  /**
   * The round's next take, or null once it ends: at the last partition, when
   * the lease ran out, or when the live set changed under it (a node heard
   * from while it awaited its takes may have taken partitions of its own
   * meanwhile; the next round decides anew). A partition is taken when it
   * targets this node and has no owner, was released, or its owner is gone;
   * none while the bucket's loss is recent.
   */
  nextTake(round: Round): Take | null {
    if (this.#now() < this.#takesFrom) return null;
    const live = new Set(round.live);
    for (; round.next < this.partitions; round.next++) {
      const p = round.next;
      if (this.#stopped || !this.#valid()) return null;
      if (!sameNodes(this.liveNodes(), round.live)) return null;
      if (this.#served.has(p) || round.targets[p] !== this.node) continue;
      const entry = this.#parts.get(p);
      if (entry !== undefined && entry.owner !== null && entry.owner !== this.node && live.has(entry.owner)) continue;
      round.next++;
      return { partition: p, revision: entry?.revision ?? null };
    }
    return null;
  }

  /** This node's take of `partition` was written with `revision` (a failed take needs no event: the watch brings the winner). */
  took(partition: number, revision: number): void {
    this.#learn(partition, this.node, revision);
  }

  /**
   * The take written with `revision` is claimed in the store, which issued
   * `token`: this node serves the partition unless, meanwhile, it stopped,
   * lost its watch, its lease or the bucket, or saw a newer entry. True when
   * it now serves it.
   */
  claimed(partition: number, revision: number, token: number): boolean {
    if (this.#stopped || !this.#watching || this.#parts.get(partition)?.revision !== revision || !this.#valid()) return false;
    this.#served.set(partition, { revision, token });
    return true;
  }

  /** This node's release of `partition` was written with `revision`. */
  released(partition: number, revision: number): void {
    this.#learn(partition, null, revision);
  }

  /** Records the result of this node's own write before the watch delivers it. */
  #learn(p: number, owner: string | null, revision: number): void {
    const known = this.#parts.get(p);
    if (known === undefined || known.revision < revision) this.#parts.set(p, { owner, revision, at: this.#now() });
  }

  /**
   * How long until the next round: a quarter lease, or less: until just
   * after the first other node's lease runs out, so the round that takes a
   * dead node's partitions runs as soon as it counts as gone.
   */
  nextRoundDelay(): number {
    const now = this.#now();
    let delay = this.leaseMs / HEARTBEATS_PER_LEASE;
    if (this.#takesFrom > now) delay = Math.min(delay, this.#takesFrom - now + 1);
    for (const [name, seen] of this.#nodes) {
      const left = this.#heardAt(seen) + this.leaseMs * GONE_AFTER - now;
      if (name !== this.node && left >= 0) delay = Math.min(delay, left + 1);
    }
    return delay;
  }

  /** The node is leaving: no further round, take or serving. */
  halt(): void {
    this.#stopped = true;
  }

  /** Stops serving everything and ends the lease; returns what it served (the revisions, for the driver to release) and the losses. */
  leave(): { owned: [partition: number, revision: number][]; lost: Loss[] } {
    this.#stopped = true;
    const owned = [...this.#served].map(([p, { revision }]): [number, number] => [p, revision]);
    const lost = this.#dropAll('stop');
    this.#validUntil = 0;
    return { owned, lost };
  }

  #drop(partition: number, reason: LossReason): Loss[] {
    return this.#served.delete(partition) ? [{ partition, reason }] : [];
  }

  #dropAll(reason: LossReason): Loss[] {
    return [...this.#served.keys()].flatMap((p) => this.#drop(p, reason));
  }
}
