/**
 * The ownership decisions of lease-core.ts on a fake clock, no NATS: each
 * case replays a race a past fix closed, and says in its name the wrong
 * implementation it catches.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { LeaseCore, type BucketEntry, type Take } from '../../src/cluster/lease-core.ts';
import { assignPartitions } from '../../src/shared/partitions.ts';

const L = 1_000;
const PARTITIONS = 4;
let t = 0;

const core = (node: string) => new LeaseCore({ node, partitions: PARTITIONS, leaseMs: L, now: () => t });
const beat = (name: string, revision: number, isUpdate = true): BucketEntry => ({ key: `node.${name}`, revision, deleted: false, isUpdate, text: () => JSON.stringify({ node: name }) });
const part = (p: number, owner: string | null, revision: number, isUpdate = true): BucketEntry => ({ key: `part.${p}`, revision, deleted: false, isUpdate, text: () => JSON.stringify({ owner }) });

/** `c` heartbeats now (acknowledged at once with `revision`) and watches a bucket whose only entry is that heartbeat. */
function join(c: LeaseCore, revision: number): void {
  c.heartbeatAcked(t, revision);
  c.watchOpened();
  c.entrySeen(beat(c.node, revision));
}

/** The partitions a round of `c` would take now (without taking them). */
function takes(c: LeaseCore): number[] {
  const start = c.beginRound();
  if (start.kind !== 'round') return [];
  const out: number[] = [];
  for (let take = c.nextTake(start.round); take !== null; take = c.nextTake(start.round)) out.push(take.partition);
  return out;
}

const targetsOf = (node: string, live: string[]) => assignPartitions(PARTITIONS, live).flatMap((owner, p) => (owner === node ? [p] : []));

beforeEach(() => {
  t = 0;
});

describe('lease core: liveness', () => {
  it('back from an outage, gives a fresh window only to nodes live when it went blind (not: everyone gone, nor: the long-dead back)', () => {
    const a = core('a');
    join(a, 1);
    a.entrySeen(beat('c', 2)); // c's last heartbeat: c dies at once
    for (t = 250; t <= 1_000; t += 250) {
      a.heartbeatAcked(t, 10 + t);
      a.entrySeen(beat('b', 20 + t));
    }
    a.entrySeen(part(0, 'b', 3_000));
    a.entrySeen(part(2, 'c', 3_001));
    expect(a.liveNodes()).toEqual(['a', 'b']);
    // NATS goes away: a hears nothing, its lease (from the send at 1000) ends at 1600.
    t = 1_600;
    expect(a.expire()).toEqual([]);
    expect(a.served()).toEqual([]);
    t = 5_000;
    a.heartbeatAcked(4_990, 5_000);
    // b was live when a went blind (at the send of its last heartbeat in time, 1000): it gets GONE_AFTER from now; c died before.
    expect(a.liveNodes()).toEqual(['a', 'b']);
    expect(takes(a)).toEqual(targetsOf('a', ['a', 'b']).filter((p) => p !== 0));
    t = 5_250;
    a.heartbeatAcked(5_250, 5_001);
    t = 5_799;
    expect(a.liveNodes()).toEqual(['a', 'b']);
    t = 5_800;
    expect(a.liveNodes()).toEqual(['a']);
  });

  it('judges a lapse when the heartbeat’s acknowledgement arrives, not when it was sent (not: no fresh window after a late ack)', () => {
    const a = core('a');
    join(a, 1); // lease until 600
    a.entrySeen(beat('b', 2)); // b heard at 0
    // Sent at 500, while the lease held; acknowledged at 700, after it ran out at 600: a was blind meanwhile.
    t = 700;
    expect(a.served()).toEqual([]);
    expect(a.heartbeatAcked(500, 3)).toBe(1_100);
    t = 1_000;
    a.heartbeatAcked(1_000, 4);
    // b's silence while a could not see does not count: judged from the ack (700), b is live until 1500.
    expect(a.liveNodes()).toEqual(['a', 'b']);
    t = 1_499;
    expect(a.liveNodes()).toEqual(['a', 'b']);
    t = 1_500;
    expect(a.liveNodes()).toEqual(['a']);
  });

  it('does not refresh a node whose heartbeat a watch delivers again (not: a re-delivered heartbeat keeps a dead node live)', () => {
    const a = core('a');
    join(a, 1);
    a.entrySeen(beat('b', 2)); // b's last heartbeat, received at 0
    t = 400;
    a.heartbeatAcked(400, 3);
    a.watchEnded(true);
    a.watchOpened(); // a new watch delivers the bucket again, b's old heartbeat with it
    a.entrySeen(beat('b', 2, false));
    a.entrySeen(beat('a', 3));
    t = 799;
    expect(a.liveNodes()).toEqual(['a', 'b']);
    t = 800;
    expect(a.liveNodes()).toEqual(['a']);
    expect(a.nodeStats().find((s) => s.node === 'b')).toEqual({ node: 'b', live: false, draining: false, partitions: 0, lease_age_ms: 800 });
  });
});

describe('lease core: a joining node’s first round', () => {
  it('waits for the whole bucket as it stood, not just its own heartbeat (not: taking partitions of a node it did not know yet)', () => {
    const a = core('a');
    a.heartbeatAcked(0, 5);
    a.watchOpened();
    // The bucket as it stood: b's partitions, a's heartbeat, then b's heartbeat last (marked isUpdate).
    for (let p = 0; p < PARTITIONS; p++) a.entrySeen(part(p, 'b', 1 + p, false));
    a.entrySeen(beat('a', 5, false));
    expect(a.watchProgress()).toBe('own-seen');
    expect(takes(a)).toEqual([]);
    a.entrySeen(beat('b', 6, true));
    expect(a.watchProgress()).toBe('caught-up');
    expect(a.liveNodes()).toEqual(['a', 'b']);
    // Every partition a targets is b's, and b is live: a waits for b to release them.
    expect(takes(a)).toEqual([]);
  });

  it('takes nothing before its watch delivered its own heartbeat (not: a round on a watch that has not caught up)', () => {
    const a = core('a');
    a.heartbeatAcked(0, 5);
    a.watchOpened();
    expect(a.watchProgress()).toBe('waiting');
    t = 500;
    a.heartbeatAcked(t, 6);
    expect(takes(a)).toEqual([]);
    a.entrySeen(beat('a', 4)); // older than the heartbeat acknowledged when the watch began: not yet
    expect(takes(a)).toEqual([]);
    a.entrySeen(beat('a', 5));
    expect(takes(a)).toEqual([0, 1, 2, 3]);
  });

  it('counts the watch caught up one lease after its own heartbeat if the end is never marked (not: waiting forever)', () => {
    const a = core('a');
    a.heartbeatAcked(0, 5);
    a.watchOpened();
    t = 100;
    a.entrySeen(beat('a', 5, false));
    t = 100 + L - 1;
    a.heartbeatAcked(t, 6);
    expect(a.watchProgress()).toBe('own-seen');
    expect(takes(a)).toEqual([]);
    t = 100 + L;
    expect(a.watchProgress()).toBe('caught-up');
    expect(takes(a)).toEqual([0, 1, 2, 3]);
  });

  it('asks for a new watch after one ended, and stops serving (not: serving blind)', () => {
    const a = core('a');
    join(a, 1);
    const round = a.beginRound();
    if (round.kind !== 'round') throw new Error(round.kind);
    const take = a.nextTake(round.round) as Take;
    a.took(take.partition, 7);
    expect(a.claimed(take.partition, 7, 100)).toBe(true);
    expect(a.tokenOf(take.partition)).toBe(100);
    expect(a.watchEnded(true)).toEqual([{ partition: take.partition, reason: 'lease' }]);
    expect(a.beginRound().kind).toBe('watch');
    expect(a.claimed(1, 8, 101)).toBe(false);
  });
});

describe('lease core: rounds', () => {
  it('ends a round when the live set changes under it (not: taking on with a stale live set)', () => {
    const a = core('a');
    join(a, 1);
    const start = a.beginRound();
    if (start.kind !== 'round') throw new Error(start.kind);
    expect(a.nextTake(start.round)).toEqual({ partition: 0, revision: null });
    a.entrySeen(beat('b', 2)); // b heard from while a awaited its first take
    expect(a.nextTake(start.round)).toBeNull();
    expect(takes(a)).toEqual(targetsOf('a', ['a', 'b']));
  });

  it('serves a take only if no newer entry came while it claimed the fence (not: serving a partition taken meanwhile)', () => {
    const a = core('a');
    join(a, 1);
    a.took(0, 10);
    a.entrySeen(part(0, 'b', 11));
    expect(a.claimed(0, 10, 1)).toBe(false);
    a.took(1, 12);
    expect(a.claimed(1, 12, 2)).toBe(true);
    expect(a.entrySeen(part(1, 'b', 13)).lost).toEqual([{ partition: 1, reason: 'taken' }]);
    expect(a.served()).toEqual([]);
  });

  it('a draining node gives up all it serves, and the others target its partitions (not: draining only in name)', () => {
    const a = core('a');
    join(a, 1);
    a.entrySeen(beat('b', 2));
    for (const p of targetsOf('a', ['a', 'b'])) {
      a.took(p, 10 + p);
      expect(a.claimed(p, 10 + p, p + 1)).toBe(true);
    }
    expect(a.served()).toEqual(targetsOf('a', ['a', 'b']));
    a.drain();
    const start = a.beginRound();
    if (start.kind !== 'round') throw new Error(start.kind);
    expect(start.releases.map((r) => r.partition)).toEqual(targetsOf('a', ['a', 'b']));
    expect(a.served()).toEqual([]);
    expect(a.nextTake(start.round)).toBeNull();
    // b hears a's draining heartbeat: every partition targets b, and a's released ones are b's to take.
    const b = core('b');
    join(b, 3);
    b.entrySeen({ ...beat('a', 4), text: () => JSON.stringify({ node: 'a', draining: true }) });
    for (const r of start.releases) b.entrySeen(part(r.partition, null, 20 + r.partition));
    expect(takes(b)).toEqual([0, 1, 2, 3]);
    expect(b.nodeStats().find((s) => s.node === 'a')?.draining).toBe(true);
  });

  it('counts an entry that is not an owner record as unowned, and says so', () => {
    const a = core('a');
    join(a, 1);
    const odd: BucketEntry = { ...part(2, null, 4), text: () => 'not json' };
    expect(a.entrySeen(odd).malformed).toBe(true);
    expect(a.owners()[2]).toBeNull();
    expect(takes(a)).toEqual([0, 1, 2, 3]);
  });
});

/**
 * Nodes on one fake bucket: writes are compare-and-set on a revision and
 * reach every watching node that is not cut off at once; a fake store
 * issues the fences' tokens to claims newer by (epoch, revision), as
 * fences.ts does. A heartbeat is a compare-and-set on the node's last, as
 * leases.ts does, so a node learns of a wiped bucket at its next one. After
 * every step, no partition may be served by two nodes.
 */
class FakeCluster {
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
    const c = core(name);
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
    this.nodes.get(name)!.heartbeatAcked(t, revision);
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
      if (serving.length > 1) this.overlaps.push(`${p} by ${serving.join(', ')} at ${t}`);
    }
  }

  /** Runs the clock to `until`: heartbeats every quarter lease, lease timers and rounds every 50 ms. */
  runUntil(until: number): void {
    for (; t < until; t += 50) {
      for (const name of this.nodes.keys()) {
        this.#check();
        // A cut-off node's timers run late too (a stalled event loop): its lease must end by the clock alone.
        if (this.cut.has(name)) continue;
        // Timers that are due run before a heartbeat's acknowledgement is handled (Node's timers phase comes first).
        this.nodes.get(name)!.expire();
        if (t % (L / 4) === 0) this.#heartbeat(name);
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

/** `c` binds a bucket made anew: its first heartbeat there (acknowledged at once with `revision`), and a watch delivering it. */
function rebind(c: LeaseCore, revision: number): void {
  join(c, revision);
}

describe('lease core: the bucket lost (NATS restarted without its store)', () => {
  it('stops serving what it won in the lost bucket, saying why, and asks for a new watch (not: serving on a bucket that is gone)', () => {
    const a = core('a');
    join(a, 1);
    const start = a.beginRound();
    if (start.kind !== 'round') throw new Error(start.kind);
    const take = a.nextTake(start.round) as Take;
    a.took(take.partition, 7);
    expect(a.claimed(take.partition, 7, 1_101)).toBe(true);
    expect(a.bucketLost()).toEqual([{ partition: take.partition, reason: 'bucket' }]);
    expect(a.served()).toEqual([]);
    expect(a.beginRound().kind).toBe('watch');
    // The watch of the lost bucket ends only now, after the next one opened: it takes nothing from that one.
    rebind(a, 1);
    expect(a.watchEnded(false)).toEqual([]);
    expect(a.watchProgress()).toBe('caught-up');
  });

  it('takes nothing for GONE_AFTER of a lease after the loss, then its share (not: taking at once what a node not yet aware still serves)', () => {
    const b = core('b');
    join(b, 1);
    b.entrySeen(beat('a', 2));
    b.entrySeen(part(0, 'a', 3)); // a serves partition 0, whatever the targets say: a rebalance it has not run yet
    expect(b.bucketLost()).toEqual([]);
    rebind(b, 1); // the bucket made anew holds no entry for partition 0
    expect(b.owners()).toEqual([null, null, null, null]);
    expect(takes(b)).toEqual([]);
    t = 500;
    b.heartbeatAcked(t, 2);
    b.entrySeen(beat('a', 3)); // a bound the new bucket too: it stopped serving first
    t = 799;
    expect(takes(b)).toEqual([]);
    expect(b.nextRoundDelay()).toBe(2);
    t = 800;
    expect(takes(b)).toEqual(targetsOf('b', ['a', 'b']));
  });

  it('believes the new bucket’s entries though their revisions are lower (not: ignoring them as older than the lost bucket’s)', () => {
    const a = core('a');
    join(a, 50);
    a.entrySeen(part(0, 'b', 60));
    a.entrySeen(beat('b', 7));
    expect(a.owners()[0]).toBe('b');
    a.bucketLost();
    rebind(a, 1);
    a.entrySeen(part(0, 'c', 3));
    expect(a.owners()[0]).toBe('c');
    // b's first heartbeat in the new bucket has the revision its last had in the old one: news all the same.
    t = 700;
    a.heartbeatAcked(t, 8);
    a.entrySeen(beat('b', 7));
    t = 1_400;
    a.heartbeatAcked(t, 9);
    expect(a.liveNodes()).toEqual(['a', 'b']);
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
