/**
 * Runs in a cluster (three real nodes on one NATS and one PostgreSQL
 * database): every run operation reaches the node that owns the run's pair,
 * whichever node the client is on, because the run id carries the pair's
 * hash; a token bound to a sender is held to its own runs at that owner.
 * Without NATS or PostgreSQL: fails under CI, skipped elsewhere, saying why.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { AgentdClient, StreamEvent } from '../../src/client/index.ts';
import { collect, testClient, testDaemon, type Daemon } from '../helpers/daemon.ts';
import { keyOwnedBy, settled } from '../helpers/cluster.ts';
import { needPostgres, testDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { NATS_URL, needNats, testClusterName } from '../helpers/nats.ts';
import { text } from '../helpers/events.ts';
import { startFakeOpenAI } from '../helpers/fake-openai.ts';

const skip = (await needNats()) ?? (await needPostgres());

// `held` answers its first step only when the test releases it: the run stays in its model call while the test steers and follows it.
const api = await startFakeOpenAI(['held']);
afterAll(() => api.close());
const PROVIDERS = { fake: { type: 'openai', base_url: api.url, api_key_env: 'FAKE_API_KEY' } };

const PARTITIONS = 16;
const AGENTS = { slow: { provider: 'fake', model: 'held' }, guarded: { model: 'echo', approve_tools: ['peers'] } };
const NAMES = ['a', 'b', 'c'];

function node(db: TestDatabase, name: string, nodeName: string): Promise<Daemon> {
  return testDaemon({
    config: { providers: PROVIDERS, agents: AGENTS, cluster: { name, partitions: PARTITIONS, lease_ms: 2_000 } },
    args: ['--store', db.url, '--cluster', NATS_URL, '--node', nodeName],
    env: { FAKE_API_KEY: 'Q9-cluster-test-key' },
  });
}

async function until(it: AsyncIterator<StreamEvent>, type: string): Promise<StreamEvent[]> {
  const seen: StreamEvent[] = [];
  for (let r = await it.next(); !r.done; r = await it.next()) {
    seen.push(r.value);
    if (r.value.type === type) return seen;
  }
  throw new Error(`the stream ended before ${type}`);
}

describe.skipIf(skip !== null)('runs in a cluster', () => {
  it('get_run, join_run, steer and approve_tool reach the pair\'s owner from any node', async () => {
    const db = await testDatabase();
    const name = testClusterName();
    const nodes = [await node(db, name, 'a'), await node(db, name, 'b'), await node(db, name, 'c')];
    const [ca, cb, cc] = (await Promise.all(nodes.map((d) => testClient(d)))) as [AgentdClient, AgentdClient, AgentdClient];
    await settled([ca, cb, cc], NAMES, PARTITIONS);
    const sender = keyOwnedBy('b', NAMES, PARTITIONS, 'slow', 'runs');

    // A detached stream through a (served at b), left after its first chunk, followed again through c.
    const first: StreamEvent[] = [];
    const it = ca.stream('slow', 'hello', { sender, detach: true })[Symbol.asyncIterator]();
    first.push(...(await until(it, 'chunk')));
    const runId = (first[0] as { run_id: string }).run_id;
    expect(await cc.steer('slow', 'and one more', sender)).toBe(runId);
    await it.return?.(undefined);
    expect(await cc.getRun(runId)).toMatchObject({ run_id: runId, status: 'running', detached: true });
    const joined = cc.joinRun(runId, (first.at(-1) as { seq: number }).seq);
    api.release();
    const rest = await collect(joined);
    expect(text([...first, ...rest])).toBe('held then releasedand one more');
    expect(await ca.getRun(runId)).toMatchObject({ status: 'done' });

    // A call waiting for approval at b, approved through c.
    const guardedSender = keyOwnedBy('b', NAMES, PARTITIONS, 'guarded', 'approve');
    const g = ca.stream('guarded', '/call peers {}', { sender: guardedSender })[Symbol.asyncIterator]();
    const waiting = await until(g, 'approval_required');
    const guardedRun = (waiting[0] as { run_id: string }).run_id;
    expect(await cc.getRun(guardedRun)).toMatchObject({ status: 'waiting' });
    await cc.approveTool(guardedRun, 'call_1_1', true);
    const after: StreamEvent[] = [];
    for (let r = await g.next(); !r.done; r = await g.next()) after.push(r.value);
    expect(after[0]).toMatchObject({ type: 'tool_result', is_error: false });
    expect(after.at(-1)).toMatchObject({ type: 'end', stop_reason: 'text' });
  }, 240_000);

  it("a token bound to a sender follows and approves its runs from any node, and gets another's as none (404)", async () => {
    const db = await testDatabase();
    const name = testClusterName();
    const nodes = [await node(db, name, 'a'), await node(db, name, 'b'), await node(db, name, 'c')];
    const [ca, cb, cc] = (await Promise.all(nodes.map((d) => testClient(d)))) as [AgentdClient, AgentdClient, AgentdClient];
    await settled([ca, cb, cc], NAMES, PARTITIONS);
    const alice = keyOwnedBy('b', NAMES, PARTITIONS, 'guarded', 'alice');
    const bob = keyOwnedBy('b', NAMES, PARTITIONS, 'guarded', 'bob');
    const token = (await ca.createToken({ scopes: ['chat'], agents: ['guarded'], sender: alice })).token;
    const [viaA, viaC] = [await nodes[0]!.tcpClient({ token }), await nodes[2]!.tcpClient({ token })];

    // Alice's run, served at b: started through a, read, approved and joined through c.
    const own = viaA.stream('guarded', '/call peers {}', { detach: true })[Symbol.asyncIterator]();
    const seen = await until(own, 'approval_required');
    const runId = (seen[0] as { run_id: string }).run_id;
    expect(await viaC.getRun(runId)).toMatchObject({ sender: alice, status: 'waiting' });
    await viaC.approveTool(runId, 'call_1_1', true);
    const joined = await collect(viaC.joinRun(runId, (seen.at(-1) as { seq: number }).seq));
    expect(joined[0]).toMatchObject({ type: 'tool_result', is_error: false });
    expect(joined.at(-1)).toMatchObject({ type: 'end', stop_reason: 'text' });

    // Bob's run at b: through c, alice gets what a run id naming no run gets.
    const bobs = ca.stream('guarded', '/call peers {}', { sender: bob, detach: true })[Symbol.asyncIterator]();
    const bobRun = ((await until(bobs, 'approval_required'))[0] as { run_id: string }).run_id;
    const ghost = bobRun.replace(/-[0-9a-z]+$/, '-zzzzzz');
    const refused = (p: Promise<unknown>, id: string) => p.then(() => null, (e: { code: number; message: string }) => ({ code: e.code, message: e.message.replaceAll(id, '<id>') }));
    const none = await refused(viaC.getRun(ghost), ghost);
    expect(none).toMatchObject({ code: 404 });
    expect(await refused(viaC.getRun(bobRun), bobRun)).toEqual(none);
    expect(await refused(viaC.approveTool(bobRun, 'call_1_1', true), bobRun)).toEqual(none);
    expect(await refused(collect(viaC.joinRun(bobRun)), bobRun)).toEqual(none);
    expect(await cb.getRun(bobRun)).toMatchObject({ status: 'waiting' });
    await cb.approveTool(bobRun, 'call_1_1', false);
    await viaA.close();
    await viaC.close();
  }, 240_000);
});
