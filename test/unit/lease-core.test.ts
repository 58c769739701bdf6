/**
 * The ownership decisions of lease-core.ts on a fake clock, no NATS: each
 * case replays a race a past fix closed, and says in its name the wrong
 * implementation it catches.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { LeaseCore, type BucketEntry, type Take } from '../../src/cluster/lease-core.ts';
import { L, PARTITIONS, targetsOf } from '../helpers/lease-fake-cluster.ts';

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
