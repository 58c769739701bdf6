/**
 * Partition ownership on one NATS bucket and fencing in one PostgreSQL
 * store: the lease managers of two (or three) nodes in this process, each on
 * a NATS connection of its own, claiming fences through a store connection
 * of its own. Without NATS or PostgreSQL: fails under CI, skipped
 * elsewhere, saying why.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { afterEach, describe, expect, it } from 'vitest';
import { LeaseManager, type LossReason } from '../../src/cluster/leases.ts';
import { pino } from 'pino';
import { createLogger } from '../../src/shared/log.ts';
import { partitionOf, type FenceSource } from '../../src/shared/partitions.ts';
import type { Message } from '../../src/models/types.ts';
import { createPgConversationStorage, createPgDaemonStorage } from '../../src/storage/postgres/store.ts';
import type { ConversationRef, ConversationStorage, DaemonStorage } from '../../src/storage/contract.ts';
import { waitFor } from '../helpers/daemon.ts';
import { connect } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { destroyBucket, natsConnection, needNats, needOwnNats, startOwnNats, testBucket, type OwnNats } from '../helpers/nats.ts';
import { createTestDatabase, needPostgres, type TestDatabase } from '../helpers/postgres.ts';

const log = createLogger('silent');
/** The warnings the nodes log, as `node: message`: a node in trouble says so once, not at every heartbeat. */
let warnings: string[] = [];
const nodeLog = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(`${(JSON.parse(line) as { node?: string }).node}: ${(JSON.parse(line) as { msg: string }).msg}`) });
const skip = (await needNats()) ?? (await needPostgres());
const skipOwn = skip ?? needOwnNats();

const PARTITIONS = 32;
const LEASE_MS = 2_000;
const SETTLE_MS = 30_000;

const user = (content: string): Message => ({ role: 'user', content });
const ref = (sender: string): ConversationRef => ({ dbId: null, agent: 'a', sender, title: '', stored: 0 });
/** A sender whose pair with agent `a` falls in `partition`. */
function senderIn(partition: number, not: readonly string[] = []): string {
  for (let i = 0; ; i++) if (partitionOf('a', `u${i}`, PARTITIONS) === partition && !not.includes(`u${i}`)) return `u${i}`;
}

interface Node {
  name: string;
  nc: NatsConnection;
  store: DaemonStorage;
  leases: LeaseManager;
}

describe.skipIf(skip !== null)('cluster partition leases and fencing', () => {
  let db: TestDatabase;
  let bucket: string;
  const nodes: Node[] = [];
  const closers: (() => Promise<unknown>)[] = [];
  /** Every gain and loss, in the order they happened, across nodes. */
  let events: { node: string; kind: 'gained' | 'lost'; partition: number; reason?: LossReason }[];
  /** Gains of a partition while another node still served it: must stay empty. */
  let overlaps: string[];
  /** A NATS server of the test's own, when it stops and restarts one. */
  let own: OwnNats | null = null;

  afterEach(async () => {
    for (const n of nodes.splice(0)) {
      await n.leases.stop();
      await n.nc.close().catch(() => undefined);
      await n.store.close();
    }
    for (const close of closers.splice(0)) await close();
    if (own === null) await destroyBucket(bucket);
    await own?.remove();
    own = null;
    await db.drop();
  });

  async function fresh(): Promise<void> {
    db = await createTestDatabase();
    bucket = testBucket();
    events = [];
    overlaps = [];
    warnings = [];
    const prepare = await createPgDaemonStorage(db.url, log);
    await prepare.prepare({});
    await prepare.close();
  }

  /** A node on the development NATS (closing its connection cuts it off), or on `own`, reconnecting to it. */
  async function join(name: string): Promise<Node> {
    const nc = own === null ? await natsConnection() : await connect({ servers: own.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    const store = await createPgDaemonStorage(db.url, log);
    const leases = new LeaseManager({ nc, node: name, partitions: PARTITIONS, leaseMs: LEASE_MS, bucket, log: nodeLog, claim: (p, e, r) => store.claimPartition!(p, e, r), epoch: (current) => store.bucketEpoch!(current) });
    leases.on('gained', (partition) => {
      for (const other of nodes) if (other.leases !== leases && other.leases.tokenOf(partition) !== null) overlaps.push(`${name} gained ${partition} while ${other.name} served it`);
      events.push({ node: name, kind: 'gained', partition });
    });
    leases.on('lost', (partition, reason) => events.push({ node: name, kind: 'lost', partition, reason }));
    const node = { name, nc, store, leases };
    nodes.push(node);
    await leases.start();
    return node;
  }

  async function shard(fences: FenceSource | null): Promise<ConversationStorage> {
    const s = await createPgConversationStorage(db.url, log, fences);
    closers.push(() => s.close());
    return s;
  }

  const servedBy = (n: Node) => n.leases.served().length;
  const settled = (...ns: Node[]) => ns.reduce((sum, n) => sum + servedBy(n), 0) === PARTITIONS;

  /** A fresh database and bucket, and nodes a and b each serving half. */
  async function twoNodes(): Promise<[Node, Node]> {
    await fresh();
    const a = await join('a');
    const b = await join('b');
    await waitFor(() => servedBy(a) === PARTITIONS / 2 && servedBy(b) === PARTITIONS / 2, 'a and b to serve half each', SETTLE_MS);
    return [a, b];
  }

  /** twoNodes on a NATS server of the test's own, to stop and restart. */
  async function twoNodesOnOwnNats(): Promise<[Node, Node, OwnNats]> {
    const nats = (own = await startOwnNats());
    return [...(await twoNodes()), nats];
  }

  it('spreads the partitions evenly over the live nodes, and rebalances when a node joins and when one leaves', async () => {
    await fresh();
    const a = await join('a');
    await waitFor(() => servedBy(a) === PARTITIONS, 'node a alone to serve every partition', SETTLE_MS);
    const b = await join('b');
    await waitFor(() => servedBy(a) === PARTITIONS / 2 && servedBy(b) === PARTITIONS / 2, 'a and b to serve half each', SETTLE_MS);
    const c = await join('c');
    await waitFor(() => settled(a, b, c) && [a, b, c].every((n) => servedBy(n) >= 10 && servedBy(n) <= 11), 'three nodes to share the partitions', SETTLE_MS);
    expect(new Set([...a.leases.served(), ...b.leases.served(), ...c.leases.served()]).size).toBe(PARTITIONS);
    const servedByC = c.leases.served();
    const stopping = events.length;
    await c.leases.stop();
    await waitFor(() => servedBy(a) === PARTITIONS / 2 && servedBy(b) === PARTITIONS / 2, 'a and b to take over what c released', SETTLE_MS);
    // A node that stops releases its partitions itself (reason `stop`), rather than letting its lease run out.
    const lostByC = events.slice(stopping).filter((e) => e.node === 'c').sort((x, y) => x.partition - y.partition);
    expect(lostByC.map((e) => [e.partition, e.reason])).toEqual(servedByC.map((p) => [p, 'stop']));
    expect(overlaps).toEqual([]);
  });

  it('moves the partitions of a node cut off from NATS once its lease is over, and that node stops serving them first', async () => {
    const [a, b] = await twoNodes();
    const ofA = a.leases.served();
    const underA = await shard(a.leases);
    expect(await underA.writeTurns([{ conv: ref(senderIn(ofA[0]!)), messages: [user('while a serves')] }])).toEqual([null]);
    const cut = events.length;
    await a.nc.close();
    await waitFor(() => servedBy(b) === PARTITIONS, 'b to take over every partition', SETTLE_MS);
    expect(servedBy(a)).toBe(0);
    const [late] = await underA.writeTurns([{ conv: ref(senderIn(ofA[0]!, [senderIn(ofA[0]!)])), messages: [user('after a was cut off')] }]);
    expect(late?.message).toMatch(/this node does not own cluster partition/);
    const after = events.slice(cut);
    const lastLossOfA = after.findLastIndex((e) => e.node === 'a' && e.kind === 'lost');
    const firstGainOfB = after.findIndex((e) => e.node === 'b' && e.kind === 'gained' && ofA.includes(e.partition));
    const lostByA = after.filter((e) => e.node === 'a').sort((x, y) => x.partition - y.partition);
    expect(lostByA.map((e) => [e.partition, e.reason])).toEqual(ofA.map((p) => [p, 'lease']));
    expect(lastLossOfA).toBeLessThan(firstGainOfB);
    expect(overlaps).toEqual([]);
  });

  it('refuses every write of an owner that lost its partition, and keeps the new owner’s', async () => {
    await fresh();
    const a = await join('a');
    await waitFor(() => servedBy(a) === PARTITIONS, 'a to serve every partition', SETTLE_MS);
    const p = 3;
    const q = 17;
    const tokenA = a.leases.tokenOf(p)!;
    const kept = senderIn(p);
    const doomed = senderIn(p, [kept]);
    const underA = await shard(a.leases);
    const first = ref(kept);
    expect(await underA.writeTurns([{ conv: first, messages: [user('written by a')] }])).toEqual([null]);
    // a keeps believing it owns p (a paused process) while b takes everything over.
    const frozenA: FenceSource = { partitions: PARTITIONS, tokenOf: (x) => (x === p ? tokenA : null) };
    const stale = await shard(frozenA);
    await a.nc.close();
    const b = await join('b');
    await waitFor(() => servedBy(b) === PARTITIONS, 'b to take over every partition', SETTLE_MS);
    const tokenB = b.leases.tokenOf(p)!;
    expect(tokenB).toBeGreaterThan(tokenA);

    const fenced = /no longer owns cluster partition 3 \(its fencing token \d+ is not the current \d+\); the write was refused/;
    const [refused] = await stale.writeTurns([{ conv: { ...first }, messages: [user('late write by a')] }]);
    expect(refused?.message).toMatch(fenced);
    await expect(stale.setSummary(first.dbId!, 'late summary by a', 1)).rejects.toThrow(fenced);
    await expect(stale.delete(first.dbId!)).rejects.toThrow(fenced);
    const [newConv] = await stale.writeTurns([{ conv: ref(doomed), messages: [user('a new pair, late')] }]);
    expect(newConv?.message).toMatch(fenced);

    // One batch holding a fenced turn and a current one: only the fenced turn is left out.
    const mixed: FenceSource = { partitions: PARTITIONS, tokenOf: (x) => (x === p ? tokenA : x === q ? b.leases.tokenOf(q) : null) };
    const [inP, inQ] = await (await shard(mixed)).writeTurns([
      { conv: ref(doomed), messages: [user('stale, in p')] },
      { conv: ref(senderIn(q)), messages: [user('current, in q')] },
    ]);
    expect(inP?.message).toMatch(fenced);
    expect(inQ).toBeNull();

    const underB = await shard(b.leases);
    const stored = await underB.load('a', kept);
    expect(stored?.recent).toEqual([user('written by a')]);
    expect(stored?.summary).toBeNull();
    expect(await underB.exists('a', doomed)).toBe(false);
    expect(await underB.writeTurns([{ conv: { ...first, stored: 1 }, messages: [user('written by b')] }])).toEqual([null]);
    expect((await underB.load('a', kept))?.recent).toEqual([user('written by a'), user('written by b')]);
  });

  it.skipIf(skipOwn !== null)('stops serving everything while NATS is down, and serves every partition again, under newer tokens, once it is back', async () => {
    const [a, b, nats] = await twoNodesOnOwnNats();
    const tokenOf = (p: number) => a.leases.tokenOf(p) ?? b.leases.tokenOf(p);
    const before = Array.from({ length: PARTITIONS }, (_, p) => tokenOf(p));
    expect(before.every((t) => t !== null)).toBe(true);
    const ofA = a.leases.served();
    await nats.stop();
    await waitFor(() => servedBy(a) === 0 && servedBy(b) === 0, 'both nodes to stop serving', SETTLE_MS);
    await nats.restart();
    await waitFor(() => settled(a, b) && servedBy(a) === PARTITIONS / 2, 'a and b to serve every partition again', SETTLE_MS);
    expect(a.leases.served()).toEqual(ofA);
    for (let p = 0; p < PARTITIONS; p++) expect(tokenOf(p), `partition ${p}`).toBeGreaterThan(before[p]!);
    expect(overlaps).toEqual([]);
  });

  it.skipIf(skipOwn !== null)('back from an outage, counts a node that had died before it as gone, and serves its partitions again at once', async () => {
    const [a, b, nats] = await twoNodesOnOwnNats();
    await b.nc.close(); // b dies: its heartbeat stays in the bucket
    await waitFor(() => servedBy(a) === PARTITIONS, 'a to take over every partition', SETTLE_MS);
    // a renews its lease a few times more: b was gone long before a goes blind.
    let renewals = 0;
    a.leases.on('renewed', () => renewals++);
    await waitFor(() => renewals >= 4, 'a to renew its lease four times', SETTLE_MS);
    await nats.stop();
    await waitFor(() => servedBy(a) === 0, 'a to stop serving', SETTLE_MS);
    const liveAtFirstGain = new Promise<string[]>((resolve) => a.leases.once('gained', () => resolve(a.leases.liveNodes())));
    await nats.restart();
    expect(await liveAtFirstGain).toEqual(['a']);
    await waitFor(() => servedBy(a) === PARTITIONS, 'a to serve every partition again', SETTLE_MS);
    expect(overlaps).toEqual([]);
  });

  it.skipIf(skipOwn !== null)('serves again after NATS lost its store, under tokens larger than before, and the old tokens’ writes are refused', async () => {
    const [a, b, nats] = await twoNodesOnOwnNats();
    const tokenOf = (p: number) => a.leases.tokenOf(p) ?? b.leases.tokenOf(p);
    const before = Array.from({ length: PARTITIONS }, (_, p) => tokenOf(p)!);
    const p = a.leases.served()[0]!;
    // A stale owner: one that keeps p's old token (a paused process) through the loss.
    const stale = await shard({ partitions: PARTITIONS, tokenOf: (x) => (x === p ? before[p]! : null) });
    await nats.loseStore();
    // Each node sees the loss at its first heartbeat after it: until then it may serve on, under its old lease.
    const renewed = (q: number) => (tokenOf(q) ?? 0) > before[q]!;
    await waitFor(() => settled(a, b) && servedBy(a) === PARTITIONS / 2 && before.every((_, q) => renewed(q)), 'a and b to serve every partition again, under new tokens', SETTLE_MS);
    // Quiet: a warning per change of state (gone, not answering, answering again), not one per failed heartbeat.
    expect(warnings.some((w) => /bucket is gone \(NATS lost its store\?\)/.test(w))).toBe(true);
    for (const node of ['a', 'b']) expect(warnings.filter((w) => w.startsWith(`${node}: `)).length, warnings.join('\n')).toBeLessThanOrEqual(4);
    const [refused] = await stale.writeTurns([{ conv: ref(senderIn(p)), messages: [user('late write under the lost bucket')] }]);
    expect(refused?.message).toMatch(/no longer owns cluster partition \d+ \(its fencing token \d+ is not the current \d+\)/);
    expect(await (await shard(a.leases.tokenOf(p) === null ? b.leases : a.leases)).writeTurns([{ conv: ref(senderIn(p)), messages: [user('after')] }])).toEqual([null]);
    expect(overlaps).toEqual([]);
  });

  it('a cluster under a new name serves on a store whose fences an earlier cluster left far past the new bucket’s revisions', async () => {
    await fresh();
    const first = await join('a');
    await waitFor(() => servedBy(first) === PARTITIONS, 'a to serve every partition', SETTLE_MS);
    await first.leases.stop();
    nodes.splice(nodes.indexOf(first), 1);
    await first.nc.close();
    await first.store.close();
    await db.query('UPDATE partition_fences SET token = 1100');
    await destroyBucket(bucket);
    bucket = testBucket();
    const [a, b] = [await join('a'), await join('b')];
    await waitFor(() => servedBy(a) === PARTITIONS / 2 && servedBy(b) === PARTITIONS / 2, 'a and b to serve half each', SETTLE_MS);
    for (let p = 0; p < PARTITIONS; p++) expect(a.leases.tokenOf(p) ?? b.leases.tokenOf(p)).toBeGreaterThan(1100);
    expect(overlaps).toEqual([]);
  });

  it('the store issues tokens that only grow, to claims newer by (epoch, revision), and renews a bucket epoch older than its fences', async () => {
    await fresh();
    const store = await createPgDaemonStorage(db.url, log);
    closers.push(() => store.close());
    const e1 = await store.bucketEpoch!(null);
    expect(await store.bucketEpoch!(e1)).toBe(e1);
    expect(await store.claimPartition!(5, e1, 900)).toBe(1);
    expect(await store.claimPartition!(5, e1, 900)).toBe(1); // the same claim again: the same token
    expect(await store.claimPartition!(5, e1, 899)).toBeNull(); // an older entry of the same bucket
    expect(await store.claimPartition!(5, e1, 950)).toBe(2);
    // NATS lost its store: a new bucket, revisions from 1, a new epoch; the late claim from the bucket gone loses.
    const e2 = await store.bucketEpoch!(null);
    expect(e2).toBeGreaterThan(e1);
    expect(await store.claimPartition!(5, e2, 3)).toBe(3);
    expect(await store.claimPartition!(5, e1, 5_000)).toBeNull();
    // A bucket found carrying an epoch older than the fences (a cluster renamed back) gets a new one; the current keeps its own.
    const e3 = await store.bucketEpoch!(e1);
    expect(e3).toBeGreaterThan(e2);
    expect(await store.bucketEpoch!(e2)).toBe(e2);
    expect(await store.claimPartition!(5, e3, 1)).toBe(4);
    expect(await db.query('SELECT token::int AS token FROM partition_fences WHERE partition = 5')).toEqual([{ token: 4 }]);
  });

  it('goes on serving when its heartbeat is not at the revision it last wrote in a bucket still its own (a write it timed out on was stored)', async () => {
    await fresh();
    const a = await join('a');
    await waitFor(() => servedBy(a) === PARTITIONS, 'a to serve every partition', SETTLE_MS);
    const nc = await natsConnection();
    closers.push(() => nc.close());
    const kv = await new Kvm(nc).create(bucket, { history: 1 });
    await kv.put('node.a', new TextEncoder().encode(JSON.stringify({ node: 'a' })));
    let renewals = 0;
    a.leases.on('renewed', () => renewals++);
    await waitFor(() => renewals >= 3, 'a to renew its lease three times', SETTLE_MS);
    expect(events.filter((e) => e.kind === 'lost')).toEqual([]);
    expect(servedBy(a)).toBe(PARTITIONS);
  });

  it('takes a partition whose bucket entry is not an owner record', async () => {
    await fresh();
    const nc = await natsConnection();
    closers.push(() => nc.close());
    const kv = await new Kvm(nc).create(bucket, { history: 1 });
    const garbage = await kv.put('part.0', new TextEncoder().encode('not json'));
    const a = await join('a');
    await waitFor(() => servedBy(a) === PARTITIONS, 'a to serve every partition', SETTLE_MS);
    expect(a.leases.tokenOf(0)).not.toBeNull();
    expect((await kv.get('part.0'))?.revision).toBeGreaterThan(garbage);
    expect(a.leases.owners()[0]).toBe('a');
  });

  it('refuses a write for a partition the node does not serve before it reaches the store', async () => {
    await fresh();
    const none = await shard({ partitions: PARTITIONS, tokenOf: () => null });
    const [r] = await none.writeTurns([{ conv: ref('x'), messages: [user('hi')] }]);
    expect(r?.message).toMatch(/does not own cluster partition \d+ \(of a\/x\); the write was refused/);
    expect(await none.exists('a', 'x')).toBe(false);
  });

  it('refuses a node name that cannot be a bucket key, and a partition count or lease that makes no sense', async () => {
    await fresh();
    const nc = await natsConnection();
    closers.push(() => nc.close());
    const base = { nc, node: 'a', partitions: 8, leaseMs: 1_000, bucket, log, claim: async () => 1, epoch: async () => 1 };
    expect(() => new LeaseManager({ ...base, node: 'a.b' })).toThrow(/node name "a.b" must be 1-64 of/);
    expect(() => new LeaseManager({ ...base, partitions: 0 })).toThrow(/partitions must be a positive integer/);
    expect(() => new LeaseManager({ ...base, leaseMs: 10 })).toThrow(/lease_ms must be an integer of at least 100/);
  });
});
