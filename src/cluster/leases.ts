/**
 * Partition ownership in a cluster, kept in a JetStream key-value bucket.
 *
 * Keys: `node.NAME` is a node's heartbeat, put every `leaseMs / 4`; `part.P`
 * names partition P's owner (`{"owner": NAME}`, or `{"owner": null}` once
 * released). A node's heartbeat is the lease on every partition it owns:
 * nodes never compare wall clocks; each one times the others by when it
 * *received* their last heartbeat (a watch on the bucket), and counts a node
 * whose heartbeat it has not seen for `GONE_AFTER` of `leaseMs` as gone, so
 * a dead node's partitions are served again within `leaseMs` of its death.
 * A node back from an outage of its own heard nothing meanwhile: it counts a
 * node that was live when it went blind as live until `GONE_AFTER` of
 * `leaseMs` after it can see again (#heardAt).
 *
 * Every node computes the same target owner for each partition from the live
 * set (assignPartitions); a node takes a partition that targets it when the
 * partition has no owner, was released, or its owner is gone, always by a
 * compare-and-set on the entry's revision, so of several nodes trying one
 * wins. The revision its write got is the partition's fencing token: it is
 * claimed in the store (`claim`) before the node serves the partition, and
 * the store refuses writes carrying any older token. An owner that is no
 * longer the target (a node joined) stops serving, then releases.
 *
 * A node serves only while its lease is valid: until `LEASE_SAFETY` of
 * `leaseMs` after it *sent* its last acknowledged heartbeat. Others wait
 * `GONE_AFTER` of `leaseMs` from when they *received* it, which is later and
 * longer, so a node cut off from NATS stops serving before anyone can take
 * its partitions over (and the store's fences refuse it if it were late).
 */
import { EventEmitter } from 'node:events';
import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm, type KV, type KvWatchEntry } from '@nats-io/kv';
import type { Logger } from '../shared/log.ts';
import { assignPartitions, NODE_NAME, type FenceSource } from '../shared/partitions.ts';

/** The bucket when none is named. */
export const DEFAULT_BUCKET = 'agentd_cluster';

/** The share of `leaseMs`, from the send of its last acknowledged heartbeat, a node serves for. */
const LEASE_SAFETY = 0.6;

/**
 * The share of `leaseMs` without a heartbeat after which others count a node
 * as gone: enough after LEASE_SAFETY for a cut-off node to have stopped, and
 * early enough that the takeover round ends within `leaseMs` of a death.
 */
const GONE_AFTER = 0.8;

/** Heartbeats per lease; ownership rounds run as often (sooner when another node's lease is about to run out), on a timer of their own. */
const HEARTBEATS_PER_LEASE = 4;


export interface LeaseOptions {
  /** A connected NATS client with JetStream; the caller owns it (closing it cuts this node off). */
  nc: NatsConnection;
  node: string;
  partitions: number;
  leaseMs: number;
  bucket?: string;
  /** Raises the partition's fence in the store (DaemonStorage.claimPartition); false: a newer owner holds it. */
  claim: (partition: number, token: number) => Promise<boolean>;
  /**
   * Before a partition this node gives up to another (rebalance) is
   * released: resolves once the turns it was running for it have ended, so
   * the next owner starts after them. Bounded by the caller.
   */
  drain?: (partition: number) => Promise<void>;
  log: Logger;
}

interface Seen {
  revision: number;
  /** performance.now() when this node received it. */
  at: number;
}

interface PartEntry extends Seen {
  owner: string | null;
}

const enc = new TextEncoder();

const sameNodes = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((name, i) => name === b[i]);

/** Why a node stopped serving a partition. */
export type LossReason = 'lease' | 'rebalance' | 'taken' | 'stop';

export interface LeaseEvents {
  /** This node now serves `partition` with `token` (its fence is claimed). */
  gained: [partition: number, token: number];
  /** This node no longer serves `partition`. */
  lost: [partition: number, reason: LossReason];
  /** A heartbeat was acknowledged: this node may serve until `untilEpochMs` (performance.timeOrigin + performance.now() time). */
  renewed: [untilEpochMs: number];
}

export class LeaseManager extends EventEmitter<LeaseEvents> implements FenceSource {
  readonly node: string;
  readonly partitions: number;
  readonly leaseMs: number;
  readonly #o: LeaseOptions;
  readonly #bucket: string;
  #kv: KV | null = null;
  #watch: AsyncIterable<KvWatchEntry> & { stop(): void } | null = null;
  readonly #nodes = new Map<string, Seen>();
  readonly #parts = new Map<number, PartEntry>();
  /** partition -> token, for the partitions this node serves. */
  readonly #served = new Map<number, number>();
  /** performance.now() until which this node may serve; 0 until its first heartbeat is acknowledged. */
  #validUntil = 0;
  #expiry: NodeJS.Timeout | null = null;
  #tick: NodeJS.Timeout | null = null;
  #beatTimer: NodeJS.Timeout | null = null;
  /** The revision of the last acknowledged heartbeat. */
  #lastBeat = 0;
  /**
   * performance.now() since when this node could see the bucket: its first
   * heartbeat acknowledged, or the first acknowledged after its lease ran
   * out. A node cut off from NATS received nobody's heartbeats, so silence
   * from before this moment does not count against the others (#heardAt).
   */
  #sightSince = 0;
  /** performance.now() when this node last knew it could see: the send of its last heartbeat acknowledged before its lease ran out. */
  #blindFrom = 0;
  #beat: Promise<unknown> = Promise.resolve();
  #ready: Promise<void> | null = null;
  #stopped = false;
  #round: Promise<void> = Promise.resolve();

  constructor(options: LeaseOptions) {
    super();
    if (!NODE_NAME.test(options.node)) throw new Error(`cluster node name ${JSON.stringify(options.node)} must be 1-64 of A-Z a-z 0-9 _ -`);
    if (!Number.isInteger(options.partitions) || options.partitions < 1) throw new Error(`cluster partitions must be a positive integer, not ${options.partitions}`);
    if (!Number.isInteger(options.leaseMs) || options.leaseMs < 100) throw new Error(`cluster lease_ms must be an integer of at least 100, not ${options.leaseMs}`);
    this.#o = options;
    this.node = options.node;
    this.partitions = options.partitions;
    this.leaseMs = options.leaseMs;
    this.#bucket = options.bucket ?? DEFAULT_BUCKET;
  }

  /** The token this node serves `partition` with, or null: what the store checks (FenceSource). */
  tokenOf(partition: number): number | null {
    if (performance.now() >= this.#validUntil) return null;
    return this.#served.get(partition) ?? null;
  }

  /** The partitions this node serves now, ascending. */
  served(): number[] {
    if (performance.now() >= this.#validUntil) return [];
    return [...this.#served.keys()].sort((a, b) => a - b);
  }

  /** The owner each partition has in the bucket, as this node last saw it (null: none). */
  owners(): (string | null)[] {
    return Array.from({ length: this.partitions }, (_, p) => this.#parts.get(p)?.owner ?? null);
  }

  /** The nodes this node counts as live now (itself only while its lease is valid), sorted. */
  liveNodes(): string[] {
    const now = performance.now();
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

  /**
   * Every node with a heartbeat in the bucket, as this node sees it: whether
   * it counts as live, the partitions the bucket gives it, and how long ago
   * its last heartbeat arrived (its lease's age). Sorted by name.
   */
  nodeStats(): { node: string; live: boolean; partitions: number; lease_age_ms: number }[] {
    const now = performance.now();
    const live = new Set(this.liveNodes());
    const owned = new Map<string, number>();
    for (const owner of this.owners()) if (owner !== null) owned.set(owner, (owned.get(owner) ?? 0) + 1);
    return [...this.#nodes.entries()]
      .map(([node, seen]) => ({ node, live: live.has(node), partitions: owned.get(node) ?? 0, lease_age_ms: Math.max(0, Math.round(now - seen.at)) }))
      .sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  }

  /** Milliseconds this node may still serve without another acknowledged heartbeat (0 once its lease ran out). */
  leaseLeftMs(): number {
    return Math.max(0, Math.round(this.#validUntil - performance.now()));
  }

  /** Joins: binds the bucket, sends the first heartbeat, reads the bucket, then takes part in ownership rounds. */
  start(): Promise<void> {
    this.#ready ??= this.#start();
    return this.#ready;
  }

  async #start(): Promise<void> {
    const kvm = new Kvm(this.#o.nc);
    this.#kv = await kvm.create(this.#bucket, { history: 1 });
    const first = await this.#heartbeat();
    if (first === null) throw new Error(`cluster node ${this.node}: the first heartbeat to NATS bucket ${this.#bucket} failed`);
    await this.#openWatch(first);
    this.#o.log.info({ node: this.node, partitions: this.partitions, leaseMs: this.leaseMs }, 'cluster node joined');
    this.#scheduleBeat();
    this.#schedule(0);
  }

  /** Heartbeats on their own timer, so a long ownership round never delays one. */
  #scheduleBeat(): void {
    if (this.#stopped) return;
    this.#beatTimer = setTimeout(() => {
      this.#beatTimer = null;
      this.#beat = this.#heartbeat().then(() => this.#scheduleBeat());
    }, this.leaseMs / HEARTBEATS_PER_LEASE);
  }

  /**
   * Watches the bucket; resolves once the watch has delivered this node's
   * heartbeat of `revision` and the rest of the bucket as it stood when the
   * watch began (its last entry is the first marked `isUpdate`). Another
   * node's heartbeat can come after this one's while its partitions' entries
   * come before: resolving at this node's heartbeat, a round could see those
   * partitions owned by a node it did not know, and take them. Should the
   * end of that first delivery never be marked, one lease after this node's
   * heartbeat arrived is enough. If the watch ends while the node runs, the
   * node can no longer see others take its partitions: it stops serving,
   * and the next round watches again.
   */
  async #openWatch(revision: number): Promise<void> {
    const watch = await this.#kv!.watch({ key: '>' });
    this.#watch = watch;
    let caughtUp!: () => void;
    const ready = new Promise<void>((resolve) => (caughtUp = resolve));
    void (async () => {
      let sawOwn = false;
      let sawAll = false;
      try {
        for await (const e of watch) {
          this.#observe(e);
          if (!sawOwn && e.key === `node.${this.node}` && e.revision >= revision) {
            sawOwn = true;
            setTimeout(caughtUp, this.leaseMs).unref();
          }
          sawAll ||= e.isUpdate;
          if (sawOwn && sawAll) caughtUp();
        }
      } finally {
        if (this.#watch === watch) this.#watch = null;
        if (!this.#stopped) {
          this.#o.log.warn({ node: this.node }, 'cluster bucket watch ended; serving nothing until it is watched again');
          this.#dropAll('lease');
        }
        caughtUp();
      }
    })().catch((err: unknown) => this.#o.log.warn({ err: (err as Error).message, node: this.node }, 'cluster bucket watch failed'));
    await ready;
  }

  #observe(e: KvWatchEntry): void {
    const at = performance.now();
    const deleted = e.operation !== 'PUT';
    if (e.key.startsWith('node.')) {
      const name = e.key.slice('node.'.length);
      if (deleted) this.#nodes.delete(name);
      // A heartbeat delivered again (a watch opened anew) is no news of its node: its arrival time stays.
      else if (this.#nodes.get(name)?.revision !== e.revision) this.#nodes.set(name, { revision: e.revision, at });
      return;
    }
    if (e.key.startsWith('part.')) {
      const p = Number(e.key.slice('part.'.length));
      if (!Number.isInteger(p) || p < 0 || p >= this.partitions) return;
      const known = this.#parts.get(p);
      if (known !== undefined && known.revision >= e.revision) return;
      let owner: string | null = null;
      if (!deleted) {
        try {
          const value = JSON.parse(e.string()) as { owner?: unknown };
          owner = typeof value.owner === 'string' ? value.owner : null;
        } catch {
          // Not written by agentd: the partition counts as unowned, and the next take replaces the entry.
          this.#o.log.warn({ node: this.node, key: e.key }, 'cluster bucket entry is not an owner record');
        }
      }
      this.#parts.set(p, { owner, revision: e.revision, at });
      const token = this.#served.get(p);
      if (token !== undefined && e.revision > token) this.#drop(p, 'taken');
    }
  }

  /** Puts this node's heartbeat; on its acknowledgement extends the lease from the moment it was sent. Null when it failed. */
  async #heartbeat(): Promise<number | null> {
    const sentAt = performance.now();
    try {
      const revision = await this.#kv!.put(`node.${this.node}`, enc.encode(JSON.stringify({ node: this.node })));
      if (this.#stopped) return revision;
      const now = performance.now();
      if (now >= this.#validUntil) {
        // The lease had run out: this node may not have seen the bucket since it last renewed it.
        this.#blindFrom = this.#validUntil - this.leaseMs * LEASE_SAFETY;
        this.#sightSince = now;
      }
      this.#lastBeat = Math.max(this.#lastBeat, revision);
      this.#validUntil = Math.max(this.#validUntil, sentAt + this.leaseMs * LEASE_SAFETY);
      this.#armExpiry();
      this.emit('renewed', performance.timeOrigin + this.#validUntil);
      return revision;
    } catch (err) {
      this.#o.log.warn({ err: (err as Error).message, node: this.node }, 'cluster heartbeat failed');
      return null;
    }
  }

  /** At the end of the lease, if no heartbeat extended it, stop serving everything. */
  #armExpiry(): void {
    if (this.#expiry !== null) clearTimeout(this.#expiry);
    const wait = Math.max(0, this.#validUntil - performance.now());
    this.#expiry = setTimeout(() => {
      this.#expiry = null;
      if (performance.now() >= this.#validUntil) this.#dropAll('lease');
      else this.#armExpiry();
    }, wait);
  }

  #drop(partition: number, reason: LossReason): void {
    if (!this.#served.delete(partition)) return;
    this.#o.log.info({ node: this.node, partition, reason }, 'cluster partition no longer served');
    this.emit('lost', partition, reason);
  }

  #dropAll(reason: LossReason): void {
    for (const p of [...this.#served.keys()]) this.#drop(p, reason);
  }

  #schedule(delay: number): void {
    if (this.#stopped) return;
    this.#tick = setTimeout(() => {
      this.#tick = null;
      this.#round = this.#roundOnce()
        .catch((err: unknown) => this.#o.log.warn({ err: (err as Error).message, node: this.node }, 'cluster ownership round failed'))
        .then(() => this.#schedule(this.#nextRoundDelay()));
    }, delay);
  }

  /**
   * A quarter lease, or less: until just after the first other node's lease
   * runs out, so the round that takes a dead node's partitions runs as soon
   * as it counts as gone rather than up to a quarter lease later.
   */
  #nextRoundDelay(): number {
    const now = performance.now();
    let delay = this.leaseMs / HEARTBEATS_PER_LEASE;
    for (const [name, seen] of this.#nodes) {
      const left = this.#heardAt(seen) + this.leaseMs * GONE_AFTER - now;
      if (name !== this.node && left >= 0) delay = Math.min(delay, left + 1);
    }
    return delay;
  }

  /** One round: give up what no longer targets this node and take what does. */
  async #roundOnce(): Promise<void> {
    if (this.#stopped) return;
    if (this.#watch === null) {
      if (performance.now() >= this.#validUntil) return;
      await this.#openWatch(this.#lastBeat);
      if (this.#watch === null) return;
    }
    if (performance.now() >= this.#validUntil) {
      this.#dropAll('lease');
      return;
    }
    const live = this.liveNodes();
    const targets = assignPartitions(this.partitions, live);
    const liveSet = new Set(live);
    // Partitions given up are drained and released side by side: one's long turn does not hold back the others.
    const releases: Promise<void>[] = [];
    for (const [p, token] of [...this.#served]) if (targets[p] !== this.node) releases.push(this.#release(p, token, 'rebalance'));
    await Promise.all(releases);
    for (let p = 0; p < this.partitions; p++) {
      if (this.#stopped || performance.now() >= this.#validUntil) return;
      // A node heard from while this round awaited its takes may have taken partitions of its own meanwhile: the next round decides anew.
      if (!sameNodes(this.liveNodes(), live)) return;
      const entry = this.#parts.get(p);
      if (this.#served.has(p)) continue;
      if (targets[p] !== this.node) continue;
      if (entry !== undefined && entry.owner !== null && entry.owner !== this.node && liveSet.has(entry.owner)) continue;
      await this.#take(p, entry);
    }
  }

  /** Takes a free, released or orphaned partition by compare-and-set, claims its fence, and serves it. */
  async #take(p: number, entry: PartEntry | undefined): Promise<void> {
    const value = enc.encode(JSON.stringify({ owner: this.node }));
    let token: number;
    try {
      token = entry === undefined ? await this.#kv!.create(`part.${p}`, value) : await this.#kv!.update(`part.${p}`, value, entry.revision);
    } catch {
      return; // another node moved first: the watch brings its entry
    }
    this.#learn(p, this.node, token);
    if (!(await this.#o.claim(p, token))) return;
    const current = this.#parts.get(p);
    if (this.#stopped || this.#watch === null || current?.revision !== token || performance.now() >= this.#validUntil) return;
    this.#served.set(p, token);
    this.emit('gained', p, token);
  }

  /** Stops serving, then releases the partition (compare-and-set on the token, so a newer owner's entry stays). */
  async #release(p: number, token: number, reason: LossReason): Promise<void> {
    this.#drop(p, reason);
    await this.#o.drain?.(p);
    if (this.#stopped) return; // stop() releases what it held
    try {
      const revision = await this.#kv!.update(`part.${p}`, enc.encode(JSON.stringify({ owner: null })), token);
      this.#learn(p, null, revision);
    } catch {
      // someone took it already
    }
  }

  /** Records the result of this node's own write before the watch delivers it. */
  #learn(p: number, owner: string | null, revision: number): void {
    const known = this.#parts.get(p);
    if (known === undefined || known.revision < revision) this.#parts.set(p, { owner, revision, at: performance.now() });
  }

  /**
   * Leaves the cluster: stops serving, releases what it owned and removes its
   * heartbeat, so the others take its partitions at once rather than after a
   * lease. The NATS connection stays the caller's.
   */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#tick !== null) clearTimeout(this.#tick);
    if (this.#beatTimer !== null) clearTimeout(this.#beatTimer);
    await Promise.all([this.#round, this.#beat]);
    if (this.#expiry !== null) clearTimeout(this.#expiry);
    const owned = [...this.#served.entries()];
    this.#dropAll('stop');
    this.#validUntil = 0;
    if (this.#kv !== null && !this.#o.nc.isClosed()) {
      for (const [p, token] of owned) {
        await this.#kv.update(`part.${p}`, enc.encode(JSON.stringify({ owner: null })), token).catch(() => undefined);
      }
      await this.#kv.delete(`node.${this.node}`).catch(() => undefined);
    }
    this.#watch?.stop();
  }
}
