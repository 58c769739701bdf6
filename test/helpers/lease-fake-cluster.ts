/**
 * A fake cluster for lease-core.ts's tests: LeaseCores on one fake bucket
 * and a fake fence store, on a fake clock, no NATS.
 */
import { LeaseCore } from '../../src/cluster/lease-core.ts';
import { assignPartitions } from '../../src/shared/partitions.ts';

/** The lease, in ms of the fake clock. */
export const L = 1_000;
export const PARTITIONS = 4;

/** The partitions `node` should own when `live` are the live nodes. */
export const targetsOf = (node: string, live: string[]): number[] => assignPartitions(PARTITIONS, live).flatMap((owner, p) => (owner === node ? [p] : []));

/**
 * Nodes on one fake bucket: writes are compare-and-set on a revision and
 * reach every watching node that is not cut off at once; a fake store
 * issues the fences' tokens to claims newer by (epoch, revision), as
 * fences.ts does. A heartbeat is a compare-and-set on the node's last, as
 * leases.ts does, so a node learns of a wiped bucket at its next one. After
 * every step, no partition may be served by two nodes.
 */
export class FakeCluster {
  /** The fake clock, in ms: runUntil moves it. */
  now = 0;
  readonly nodes = new Map<string, LeaseCore>();
  readonly cut = new Set<string>();
  readonly #entries = new Map<string, { revision: number; text: string }>();
  readonly #fences = new Map<number, { epoch: number; revision: number; token: number }>();
  /** Every token each partition's fence held, in order. */
  readonly tokens = new Map<number, number[]>();
  #revision = 0;
  #epoch = 1;
  /** Per node: the revision of its last heartbeat (null: none in this bucket), and the epoch it bound (null: lost, to bind). */
  readonly #bound = new Map<string, { beat: number | null; epoch: number | null }>();
  overlaps: string[] = [];

  /** NATS lost its store: the bucket comes back empty, its revisions from 1, and binding it gets a new epoch. */
  wipe(): void {
    this.#entries.clear();
    this.#revision = 0;
    this.#epoch++;
  }

  /** The store's claim (fences.ts claimFence): a new token when (epoch, revision) is newer than the fence's. */
  #claim(p: number, epoch: number, revision: number): number | null {
    const held = this.#fences.get(p) ?? { epoch: 0, revision: 0, token: 0 };
    if (epoch < held.epoch || (epoch === held.epoch && revision <= held.revision)) return null;
    const token = held.token + 1;
    this.#fences.set(p, { epoch, revision, token });
    this.tokens.set(p, [...(this.tokens.get(p) ?? []), token]);
    return token;
  }

  /** A write by `by`; `expected`: the revision it replaces (null: none), undefined: any. Null when refused or cut off. */
  #write(by: string, key: string, text: string, expected?: number | null): number | null {
    if (this.cut.has(by)) return null;
    if (expected !== undefined && (this.#entries.get(key)?.revision ?? null) !== expected) return null;
    const revision = ++this.#revision;
    this.#entries.set(key, { revision, text });
    for (const [name, c] of this.nodes) {
      if (!this.cut.has(name) && c.watchProgress() !== 'none') c.entrySeen({ key, revision, deleted: false, isUpdate: true, text: () => text });
    }
    return revision;
  }

  join(name: string): void {
    const c = new LeaseCore({ node: name, partitions: PARTITIONS, leaseMs: L, now: () => this.now });
    this.nodes.set(name, c);
    this.#bound.set(name, { beat: null, epoch: this.#epoch });
    this.#heartbeat(name);
    this.#watch(name);
  }

  #heartbeat(name: string): void {
    const bound = this.#bound.get(name)!;
    if (bound.epoch === null || this.cut.has(name)) return;
    const key = `node.${name}`;
    if (bound.beat !== null && (this.#entries.get(key)?.revision ?? null) !== bound.beat) {
      // Not the revision it last wrote: the bucket was made anew.
      bound.epoch = null;
      this.nodes.get(name)!.bucketLost();
      this.#check();
      return;
    }
    const revision = this.#write(name, key, JSON.stringify({ node: name }), bound.beat ?? undefined);
    if (revision === null) return;
    bound.beat = revision;
    this.nodes.get(name)!.heartbeatAcked(this.now, revision);
  }

  /** The driver's round start after a loss: bind the bucket again (its epoch, a first heartbeat by put). */
  #rebind(name: string): void {
    const bound = this.#bound.get(name)!;
    if (bound.epoch !== null || this.cut.has(name)) return;
    bound.epoch = this.#epoch;
    bound.beat = null;
    this.#heartbeat(name);
  }

  #watch(name: string): void {
    const c = this.nodes.get(name)!;
    c.watchOpened();
    const entries = [...this.#entries].sort(([, x], [, y]) => x.revision - y.revision);
    entries.forEach(([key, { revision, text }], i) => c.entrySeen({ key, revision, deleted: false, isUpdate: i === entries.length - 1, text: () => text }));
  }

  #round(name: string): void {
    const c = this.nodes.get(name)!;
    this.#rebind(name);
    let start = c.beginRound();
    if (start.kind === 'watch' && !this.cut.has(name)) {
      this.#watch(name);
      start = c.beginRound();
    }
    if (start.kind !== 'round') return;
    for (const { partition, revision: held } of start.releases) {
      const revision = this.#write(name, `part.${partition}`, JSON.stringify({ owner: null }), held);
      if (revision !== null) c.released(partition, revision);
    }
    for (let take = c.nextTake(start.round); take !== null; take = c.nextTake(start.round)) {
      const won = this.#write(name, `part.${take.partition}`, JSON.stringify({ owner: name }), take.revision);
      if (won === null) continue;
      c.took(take.partition, won);
      const token = this.#claim(take.partition, this.#bound.get(name)!.epoch!, won);
      if (token === null) continue;
      c.claimed(take.partition, won, token);
      this.#check();
    }
  }

  #check(): void {
    for (let p = 0; p < PARTITIONS; p++) {
      const serving = [...this.nodes.values()].filter((c) => c.tokenOf(p) !== null).map((c) => c.node);
      if (serving.length > 1) this.overlaps.push(`${p} by ${serving.join(', ')} at ${this.now}`);
    }
  }

  /** Runs the clock to `until`: heartbeats every quarter lease, lease timers and rounds every 50 ms. */
  runUntil(until: number): void {
    for (; this.now < until; this.now += 50) {
      for (const name of this.nodes.keys()) {
        this.#check();
        // A cut-off node's timers run late too (a stalled event loop): its lease must end by the clock alone.
        if (this.cut.has(name)) continue;
        // Timers that are due run before a heartbeat's acknowledgement is handled (Node's timers phase comes first).
        this.nodes.get(name)!.expire();
        if (this.now % (L / 4) === 0) this.#heartbeat(name);
        this.#round(name);
      }
    }
  }

  /** Each partition's fence token now (0: none). */
  currentTokens(): number[] {
    return Array.from({ length: PARTITIONS }, (_, p) => this.#fences.get(p)?.token ?? 0);
  }

  /** Sets every partition's fence, as an earlier cluster left them. */
  fenceAll(fence: { epoch: number; revision: number; token: number }): void {
    for (let p = 0; p < PARTITIONS; p++) this.#fences.set(p, { ...fence });
  }

  served(): Record<string, number[]> {
    return Object.fromEntries([...this.nodes].map(([name, c]) => [name, c.served()]));
  }
}

