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
    expect(a.nodeStats().find((s) => s.node === 'b')).toEqual({ node: 'b', live: false, partitions: 0, lease_age_ms: 800 });
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
    expect(a.claimed(take.partition, 7)).toBe(true);
    expect(a.watchEnded(true)).toEqual([{ partition: take.partition, reason: 'lease' }]);
    expect(a.beginRound().kind).toBe('watch');
    expect(a.claimed(1, 8)).toBe(false);
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
    expect(a.claimed(0, 10)).toBe(false);
    a.took(1, 12);
    expect(a.claimed(1, 12)).toBe(true);
    expect(a.entrySeen(part(1, 'b', 13)).lost).toEqual([{ partition: 1, reason: 'taken' }]);
    expect(a.served()).toEqual([]);
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
 * reach every watching node that is not cut off at once; fences claimed in
 * a fake store refuse older tokens. After every step, no partition may be
 * served by two nodes.
 */
class FakeCluster {
  readonly nodes = new Map<string, LeaseCore>();
  readonly cut = new Set<string>();
  readonly #entries = new Map<string, { revision: number; text: string }>();
  readonly #fences = new Map<number, number>();
  #revision = 0;
  overlaps: string[] = [];

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
    this.#heartbeat(name);
    this.#watch(name);
  }

  #heartbeat(name: string): void {
    const revision = this.#write(name, `node.${name}`, JSON.stringify({ node: name }));
    if (revision !== null) this.nodes.get(name)!.heartbeatAcked(t, revision);
  }

  #watch(name: string): void {
    const c = this.nodes.get(name)!;
    c.watchOpened();
    const entries = [...this.#entries].sort(([, x], [, y]) => x.revision - y.revision);
    entries.forEach(([key, { revision, text }], i) => c.entrySeen({ key, revision, deleted: false, isUpdate: i === entries.length - 1, text: () => text }));
  }

  #round(name: string): void {
    const c = this.nodes.get(name)!;
    let start = c.beginRound();
    if (start.kind === 'watch' && !this.cut.has(name)) {
      this.#watch(name);
      start = c.beginRound();
    }
    if (start.kind !== 'round') return;
    for (const { partition, token } of start.releases) {
      const revision = this.#write(name, `part.${partition}`, JSON.stringify({ owner: null }), token);
      if (revision !== null) c.released(partition, revision);
    }
    for (let take = c.nextTake(start.round); take !== null; take = c.nextTake(start.round)) {
      const token = this.#write(name, `part.${take.partition}`, JSON.stringify({ owner: name }), take.revision);
      if (token === null) continue;
      c.took(take.partition, token);
      if (token <= (this.#fences.get(take.partition) ?? 0)) continue;
      this.#fences.set(take.partition, token);
      c.claimed(take.partition, token);
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
