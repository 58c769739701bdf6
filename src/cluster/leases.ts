/**
 * Partition ownership in a cluster, kept in a JetStream key-value bucket:
 * the NATS driver of the ownership decisions in lease-core.ts. It feeds the
 * core what the bucket's watch delivers, the acknowledgements of its own
 * writes and timer ticks, and performs what the core decides.
 *
 * Keys: `node.NAME` is a node's heartbeat, put every `leaseMs / 4`; `part.P`
 * names partition P's owner (`{"owner": NAME}`, or `{"owner": null}` once
 * released). A node's heartbeat is the lease on every partition it owns
 * (lease-core.ts says how nodes time each other without comparing clocks).
 *
 * Every node computes the same target owner for each partition from the live
 * set (assignPartitions); a node takes a partition that targets it when the
 * partition has no owner, was released, or its owner is gone, always by a
 * compare-and-set on the entry's revision, so of several nodes trying one
 * wins. The node then claims the partition in the store (`claim`) with the
 * revision its write got and the bucket's epoch, and serves it with the
 * token the store answers, larger than any before; the store refuses writes
 * carrying any older token. An owner that is no longer the target (a node
 * joined) stops serving, then releases.
 *
 * The bucket can go (NATS restarted without its store) or be made anew: a
 * heartbeat is a compare-and-set on the revision of the last one, so a node
 * learns of it at its next heartbeat (the bucket no longer carries the
 * epoch the node bound it with), stops serving, and binds the bucket
 * again (bucket.ts: making it if no node did yet, with a new epoch from the
 * store), taking nothing for a while (lease-core.ts, bucketLost).
 */
import { EventEmitter } from 'node:events';
import type { NatsConnection } from '@nats-io/transport-node';
import type { KV, KvWatchEntry } from '@nats-io/kv';
import type { Logger } from '../shared/log.ts';
import { NODE_NAME, type FenceSource } from '../shared/partitions.ts';
import { bindBucket, diagnose, EPOCH_KEY, epochIn, QuietWarnings, type OwnKey } from './bucket.ts';
import { HEARTBEATS_PER_LEASE, LeaseCore, type Loss, type LossReason, type Round, type Take } from './lease-core.ts';

export type { LossReason } from './lease-core.ts';

/** The bucket when none is named. */
export const DEFAULT_BUCKET = 'agentd_cluster';

export interface LeaseOptions {
  /** A connected NATS client with JetStream; the caller owns it (closing it cuts this node off). */
  nc: NatsConnection;
  node: string;
  partitions: number;
  leaseMs: number;
  bucket?: string;
  /** Claims the partition's fence for its bucket entry at (`epoch`, `revision`) (DaemonStorage.claimPartition): the token to serve it with, or null (a newer claim holds it). */
  claim: (partition: number, epoch: number, revision: number) => Promise<number | null>;
  /** The epoch the bucket is to carry, given the one it carries (DaemonStorage.bucketEpoch). */
  epoch: (current: number | null) => Promise<number>;
  /**
   * Before a partition this node gives up to another (rebalance) is
   * released: resolves once the turns it was running for it have ended, so
   * the next owner starts after them. Bounded by the caller.
   */
  drain?: (partition: number) => Promise<void>;
  log: Logger;
}

const enc = new TextEncoder();
const ownerRecord = (owner: string | null) => enc.encode(JSON.stringify({ owner }));

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
  readonly #core: LeaseCore;
  #kv: KV | null = null;
  /** The epoch of the bucket as this node bound it: its claims carry it. */
  #epoch = 0;
  /** False from the bucket's loss until it is bound again. */
  #bound = false;
  /** Counts the bucket's losses: a heartbeat's result from before the last one is old news. */
  #losses = 0;
  /** The revision of this node's last heartbeat (null: none in this bucket yet): the next is a compare-and-set on it. */
  #beatRevision: number | null = null;
  readonly #bucketWarnings: QuietWarnings;
  readonly #roundWarnings: QuietWarnings;
  #watch: AsyncIterable<KvWatchEntry> & { stop(): void } | null = null;
  #expiry: NodeJS.Timeout | null = null;
  #tick: NodeJS.Timeout | null = null;
  #beatTimer: NodeJS.Timeout | null = null;
  #beat: Promise<unknown> = Promise.resolve();
  #ready: Promise<void> | null = null;
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
    this.#core = new LeaseCore({ node: options.node, partitions: options.partitions, leaseMs: options.leaseMs, now: () => performance.now() });
    this.#bucketWarnings = new QuietWarnings(options.log, options.node, 'cluster bucket answers again');
    this.#roundWarnings = new QuietWarnings(options.log, options.node, 'cluster ownership rounds succeed again');
  }

  /** The token this node serves `partition` with, or null: what the store checks (FenceSource). */
  tokenOf(partition: number): number | null {
    return this.#core.tokenOf(partition);
  }

  /** The partitions this node serves now, ascending. */
  served(): number[] {
    return this.#core.served();
  }

  /** The owner each partition has in the bucket, as this node last saw it (null: none). */
  owners(): (string | null)[] {
    return this.#core.owners();
  }

  /** The nodes this node counts as live now (itself only while its lease is valid), sorted. */
  liveNodes(): string[] {
    return this.#core.liveNodes();
  }

  /** Every node with a heartbeat in the bucket: whether it counts as live, its partitions and its lease's age. Sorted by name. */
  nodeStats(): { node: string; live: boolean; draining: boolean; partitions: number; lease_age_ms: number }[] {
    return this.#core.nodeStats();
  }

  /** Milliseconds this node may still serve without another acknowledged heartbeat (0 once its lease ran out). */
  leaseLeftMs(): number {
    return this.#core.leaseLeftMs();
  }

  /** `drain`: this node's next heartbeat says so, and its rounds give up every partition (see LeaseCore.drain). */
  drain(): void {
    this.#core.drain();
    void this.#heartbeat();
  }

  /** Joins: binds the bucket, sends the first heartbeat, reads the bucket, then takes part in ownership rounds. */
  start(): Promise<void> {
    this.#ready ??= this.#start();
    return this.#ready;
  }

  async #start(): Promise<void> {
    await this.#bind();
    await this.#openWatch();
    this.#o.log.info({ node: this.node, partitions: this.partitions, leaseMs: this.leaseMs }, 'cluster node joined');
    this.#scheduleBeat();
    this.#schedule(0);
  }

  /** Binds the bucket (making it if it is missing) with its epoch, then heartbeats there; throws if either fails. */
  async #bind(): Promise<void> {
    const { kv, epoch } = await bindBucket(this.#o.nc, this.#bucket, this.#o.epoch);
    await this.#beat;
    this.#kv = kv;
    this.#epoch = epoch;
    this.#beatRevision = null;
    const first = await this.#heartbeat();
    if (first === null) throw new Error(`cluster node ${this.node}: the first heartbeat to NATS bucket ${this.#bucket} failed`);
    this.#bound = true;
  }

  /** Heartbeats on their own timer, so a long ownership round never delays one; none while the bucket is lost (the round binds it again). */
  #scheduleBeat(): void {
    if (this.#core.stopped) return;
    this.#beatTimer = setTimeout(() => {
      this.#beatTimer = null;
      void (this.#bound ? this.#heartbeat() : Promise.resolve(null)).then(() => this.#scheduleBeat());
    }, this.leaseMs / HEARTBEATS_PER_LEASE);
  }

  /**
   * Watches the bucket; resolves once the core counts the watch as caught up
   * (or it ends). If the watch ends while the node runs, the node can no
   * longer see others take its partitions: it stops serving, and the next
   * round watches again.
   */
  async #openWatch(): Promise<void> {
    const watch = await this.#kv!.watch({ key: '>' });
    this.#watch = watch;
    this.#core.watchOpened();
    let caughtUp!: () => void;
    const ready = new Promise<void>((resolve) => (caughtUp = resolve));
    void (async () => {
      let bounded = false;
      try {
        for await (const e of watch) {
          if (this.#watch !== watch) break; // the bucket was lost: another watch follows the next one
          this.#see(e);
          const progress = this.#core.watchProgress();
          if (progress === 'caught-up') caughtUp();
          else if (progress === 'own-seen' && !bounded) {
            bounded = true;
            // A millisecond over the lease, so the core's clock agrees it has passed.
            setTimeout(caughtUp, this.leaseMs + 1).unref();
          }
        }
      } finally {
        const current = this.#watch === watch;
        if (current) this.#watch = null;
        if (current && !this.#core.stopped) this.#o.log.warn({ node: this.node }, 'cluster bucket watch ended; serving nothing until it is watched again');
        this.#lose(this.#core.watchEnded(current));
        caughtUp();
      }
    })().catch((err: unknown) => this.#o.log.warn({ err: (err as Error).message, node: this.node }, 'cluster bucket watch failed'));
    await ready;
  }

  #see(e: KvWatchEntry): void {
    if (e.key === EPOCH_KEY) {
      // Another node gave the bucket a new epoch (it found it older than the store's fences): claims carry the new one.
      if (epochIn(e.operation === 'PUT' ? e.string() : null) !== this.#epoch) this.#bucketLost('replaced');
      return;
    }
    const outcome = this.#core.entrySeen({ key: e.key, revision: e.revision, deleted: e.operation !== 'PUT', isUpdate: e.isUpdate, text: () => e.string() });
    if (outcome.malformed) this.#o.log.warn({ node: this.node, key: e.key }, 'cluster bucket entry is not an owner record');
    this.#lose(outcome.lost);
  }

  /** One heartbeat at a time: each is a compare-and-set on the revision the last one got. */
  #heartbeat(): Promise<number | null> {
    const next = this.#beat.then(() => this.#heartbeatNow());
    this.#beat = next;
    return next;
  }

  /**
   * Puts this node's heartbeat (by compare-and-set on its last); on its
   * acknowledgement the core extends the lease from the moment it was sent.
   * Null when it failed, or when the bucket was lost meanwhile.
   */
  async #heartbeatNow(): Promise<number | null> {
    const sentAt = performance.now();
    const losses = this.#losses;
    const key = `node.${this.node}`;
    const value = enc.encode(JSON.stringify(this.#core.draining ? { node: this.node, draining: true } : { node: this.node }));
    try {
      const revision = this.#beatRevision === null ? await this.#kv!.put(key, value) : await this.#kv!.update(key, value, this.#beatRevision);
      if (losses !== this.#losses) return null;
      this.#beatRevision = revision;
      if (this.#core.stopped) return revision;
      const until = this.#core.heartbeatAcked(sentAt, revision);
      if (this.#core.watchProgress() === 'caught-up') this.#bucketWarnings.ok();
      this.#armExpiry();
      this.emit('renewed', performance.timeOrigin + until);
      return revision;
    } catch (err) {
      await this.#trouble(err, losses, { kv: this.#kv!, epoch: this.#epoch, key });
      return null;
    }
  }

  /**
   * A write or watch of the bucket failed: when the bucket is gone or was
   * made anew, this node stops serving and binds it again; otherwise (NATS
   * or JetStream not answering, for now) it warns once.
   */
  async #trouble(err: unknown, losses: number, own: OwnKey | null): Promise<void> {
    const trouble = await diagnose(this.#o.nc, this.#bucket, err, own);
    if (losses !== this.#losses || this.#core.stopped) return;
    if (trouble.kind === 'gone' || trouble.kind === 'replaced') this.#bucketLost(trouble.kind);
    else if (trouble.kind === 'out-of-step') this.#beatRevision = trouble.revision;
    else if (trouble.kind === 'unavailable' || own !== null) this.#bucketWarnings.trouble('unavailable', 'cluster bucket does not answer; this node serves nothing once its lease runs out, until it does', { err: trouble.why });
    else this.#roundWarnings.trouble('failed', 'cluster ownership round failed', { err: trouble.why });
  }

  /** The bucket is gone or was made anew: serve nothing, forget it, and bind it again at the next round. */
  #bucketLost(kind: 'gone' | 'replaced'): void {
    this.#bucketWarnings.trouble(kind, kind === 'gone'
      ? 'cluster bucket is gone (NATS lost its store?): this node serves nothing, makes it again and takes partitions anew'
      : 'cluster bucket was made anew or given a new epoch: this node serves nothing, binds it again and takes partitions anew', { bucket: this.#bucket });
    if (!this.#bound) return;
    this.#bound = false;
    this.#losses++;
    const watch = this.#watch;
    this.#watch = null;
    watch?.stop();
    this.#lose(this.#core.bucketLost());
  }

  /** At the end of the lease, if no heartbeat extended it, stop serving everything. */
  #armExpiry(): void {
    if (this.#expiry !== null) clearTimeout(this.#expiry);
    const wait = Math.max(0, this.#core.validUntil - performance.now());
    this.#expiry = setTimeout(() => {
      this.#expiry = null;
      if (performance.now() >= this.#core.validUntil) this.#lose(this.#core.expire());
      else this.#armExpiry();
    }, wait);
  }

  #lose(losses: Loss[]): void {
    for (const { partition, reason } of losses) {
      this.#o.log.info({ node: this.node, partition, reason }, 'cluster partition no longer served');
      this.emit('lost', partition, reason);
    }
  }

  #schedule(delay: number): void {
    if (this.#core.stopped) return;
    this.#tick = setTimeout(() => {
      this.#tick = null;
      const losses = this.#losses;
      this.#round = this.#roundOnce()
        .catch((err: unknown) => this.#trouble(err, losses, null))
        .then(() => this.#schedule(this.#core.nextRoundDelay()));
    }, delay);
  }

  /** One round: give up what no longer targets this node and take what does, as the core decides. */
  async #roundOnce(): Promise<void> {
    if (!this.#bound) await this.#bind();
    let start = this.#core.beginRound();
    if (start.kind === 'watch') {
      await this.#openWatch();
      start = this.#core.beginRound();
    }
    if (start.kind === 'expired') this.#lose(start.lost);
    if (start.kind !== 'round') return;
    this.#lose(start.lost);
    // Partitions given up are drained and released side by side: one's long turn does not hold back the others.
    await Promise.all(start.releases.map(({ partition, revision }) => this.#release(partition, revision)));
    await this.#takeAll(start.round);
    this.#roundWarnings.ok();
  }

  async #takeAll(round: Round): Promise<void> {
    for (let take = this.#core.nextTake(round); take !== null; take = this.#core.nextTake(round)) await this.#take(take);
  }

  /** Takes a free, released or orphaned partition by compare-and-set, claims its fence, and serves it if the core still agrees. */
  async #take({ partition: p, revision }: Take): Promise<void> {
    const value = ownerRecord(this.node);
    const [epoch, losses] = [this.#epoch, this.#losses];
    let won: number;
    try {
      won = revision === null ? await this.#kv!.create(`part.${p}`, value) : await this.#kv!.update(`part.${p}`, value, revision);
    } catch {
      return; // another node moved first: the watch brings its entry
    }
    this.#core.took(p, won);
    const token = await this.#o.claim(p, epoch, won);
    // A take in a bucket lost meanwhile is none: a take in the next one may have the same revision.
    if (token !== null && losses === this.#losses && this.#core.claimed(p, won, token)) this.emit('gained', p, token);
  }

  /** After the core stopped serving it: drains, then releases the partition (compare-and-set on its revision, so a newer owner's entry stays). */
  async #release(p: number, revision: number): Promise<void> {
    await this.#o.drain?.(p);
    if (this.#core.stopped) return; // stop() releases what it held
    try {
      this.#core.released(p, await this.#kv!.update(`part.${p}`, ownerRecord(null), revision));
    } catch {
      // someone took it already
    }
  }

  /**
   * Leaves the cluster: stops serving, releases what it owned and removes its
   * heartbeat, so the others take its partitions at once rather than after a
   * lease. The NATS connection stays the caller's.
   */
  async stop(): Promise<void> {
    if (this.#core.stopped) return;
    this.#core.halt();
    if (this.#tick !== null) clearTimeout(this.#tick);
    if (this.#beatTimer !== null) clearTimeout(this.#beatTimer);
    await Promise.all([this.#round, this.#beat]);
    if (this.#expiry !== null) clearTimeout(this.#expiry);
    const { owned, lost } = this.#core.leave();
    this.#lose(lost);
    if (this.#kv !== null && !this.#o.nc.isClosed()) {
      for (const [p, revision] of owned) await this.#kv.update(`part.${p}`, ownerRecord(null), revision).catch(() => undefined);
      await this.#kv.delete(`node.${this.node}`).catch(() => undefined);
    }
    this.#watch?.stop();
  }
}
