/**
 * Durable waiting in a cluster (PROTOCOL §4.13): three real nodes on one
 * NATS and one PostgreSQL database. A detached run waits for approval on
 * the node that owns its pair; that node is killed (SIGKILL); the node that
 * gains the pair's partition resumes the run under the same run id, so
 * get_run and approve_tool sent to any node find it, and it completes.
 * Without NATS or PostgreSQL: fails under CI, skipped elsewhere, saying why.
 */
import { describe, expect, it } from 'vitest';
import type { AgentdClient, StreamEvent } from '../../src/client/index.ts';
import { collect, testClient, testDaemon, waitFor, type Daemon } from '../helpers/daemon.ts';
import { clusterStats, keyOwnedBy, settled } from '../helpers/cluster.ts';
import { needPostgres, testDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { NATS_URL, needNats, testClusterName } from '../helpers/nats.ts';
import { text, until } from '../helpers/events.ts';

const skip = (await needNats()) ?? (await needPostgres());

const PARTITIONS = 16;
const AGENTS = { guarded: { model: 'echo', approve_tools: ['peers'] }, other: { model: 'echo' } };
const NAMES = ['a', 'b', 'c'];
const PEERS = '/call peers {}';

function node(db: TestDatabase, name: string, nodeName: string): Promise<Daemon> {
  return testDaemon({
    config: { agents: AGENTS, cluster: { name, partitions: PARTITIONS, lease_ms: 2_000 } },
    args: ['--store', db.url, '--cluster', NATS_URL, '--node', nodeName],
  });
}

describe.skipIf(skip !== null)('a run waiting for approval in a cluster', () => {
  it('survives kill -9 of its node: the partition\'s new owner resumes it, approve_tool from any node completes it', async () => {
    const db = await testDatabase();
    const name = testClusterName();
    const [a, b, c] = [await node(db, name, 'a'), await node(db, name, 'b'), await node(db, name, 'c')] as [Daemon, Daemon, Daemon];
    const [ca, cb, cc] = (await Promise.all([a, b, c].map((d) => testClient(d)))) as [AgentdClient, AgentdClient, AgentdClient];
    await settled([ca, cb, cc], NAMES, PARTITIONS);
    const sender = keyOwnedBy('b', NAMES, PARTITIONS, 'guarded', 'durable');

    // Through a, served at b: waiting for approval.
    const it = ca.stream('guarded', PEERS, { sender, detach: true })[Symbol.asyncIterator]();
    const seen = await until(it, 'approval_required');
    const runId = (seen[0] as { run_id: string }).run_id;
    const seq = (seen.at(-1) as { seq: number }).seq;
    expect(await cc.getRun(runId)).toMatchObject({ status: 'waiting' });

    await cb.close().catch(() => undefined);
    await b.stop('SIGKILL');
    await waitFor(async () => (await Promise.all([ca, cc].map((x) => clusterStats(x)))).reduce((n, s) => n + s.served_partitions, 0) === PARTITIONS, "b's partitions served again", 60_000);

    // The run is found by its id on the new owner, through either node.
    expect(await cc.getRun(runId)).toMatchObject({ run_id: runId, status: 'waiting', pending_approvals: [{ call_id: 'call_1_1', tool: 'peers', arguments: '{}' }] });
    const owner = (await Promise.all([ca, cc].map(async (x) => (await x.listRuns({ status: 'waiting' })).map((r) => r.run_id)))).flat();
    expect(owner).toEqual([runId]); // list_runs answers for the node asked: exactly one of them holds it
    await ca.approveTool(runId, 'call_1_1', true);
    const rest: StreamEvent[] = await collect(cc.joinRun(runId, seq));
    expect(rest[0]).toMatchObject({ type: 'tool_result', call_id: 'call_1_1', is_error: false });
    expect((rest[0] as { output: string }).output).toContain('"other"');
    expect(rest.at(-1)).toMatchObject({ type: 'end', stop_reason: 'text' });
    expect(text(rest)).toBe((rest[0] as { output: string }).output);
    expect(await ca.getRun(runId)).toMatchObject({ status: 'done' });
    const history = (await cc.history('guarded', sender)).messages.map((m) => m.role);
    expect(history).toEqual(['user', 'assistant', 'tool', 'assistant']);
  }, 240_000);

  it('moves with its partition when a node joins: the node that gains it resumes it, a denial completes it', async () => {
    const db = await testDatabase();
    const name = testClusterName();
    const [a, b] = [await node(db, name, 'a'), await node(db, name, 'b')] as [Daemon, Daemon];
    const [ca, cb] = (await Promise.all([a, b].map((d) => testClient(d)))) as [AgentdClient, AgentdClient];
    await settled([ca, cb], ['a', 'b'], PARTITIONS);
    // A pair that a or b serves now and c will serve once it joins.
    const sender = keyOwnedBy('c', NAMES, PARTITIONS, 'guarded', 'moving');
    const it = ca.stream('guarded', PEERS, { sender, detach: true })[Symbol.asyncIterator]();
    const seen = await until(it, 'approval_required');
    const runId = (seen[0] as { run_id: string }).run_id;
    const seq = (seen.at(-1) as { seq: number }).seq;

    const c = await node(db, name, 'c');
    const cc = await testClient(c);
    await settled([ca, cb, cc], NAMES, PARTITIONS);
    // Its old owner let it go without cancelling it: the first stream ends there, the run stays waiting for c.
    const left: StreamEvent[] = [];
    for (let r = await it.next(); !r.done; r = await it.next()) left.push(r.value);
    expect(left.at(-1)).toMatchObject({ type: 'end', stop_reason: 'cancelled' });
    expect((left.at(-1) as { error: string }).error).toMatch(/stays waiting for approval in the store/);
    expect(await cb.getRun(runId)).toMatchObject({ status: 'waiting', pending_approvals: [{ call_id: 'call_1_1' }] });
    expect((await cc.listRuns({ status: 'waiting' })).map((r) => r.run_id)).toEqual([runId]); // c holds it now
    await cb.approveTool(runId, 'call_1_1', false, 'moved');
    const rest: StreamEvent[] = await collect(ca.joinRun(runId, seq));
    expect(rest[0]).toMatchObject({ type: 'tool_result', is_error: true, output: 'denied: moved' });
    expect(rest.at(-1)).toMatchObject({ type: 'end', stop_reason: 'text' });
    expect((await ca.history('guarded', sender)).messages.map((m) => `${m.role}: ${m.content}`)).toEqual([
      `user: ${PEERS}`, 'assistant: ', 'tool: denied: moved', 'assistant: denied: moved',
    ]);
  }, 240_000);
});
