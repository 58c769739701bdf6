/**
 * Schedules in a cluster (PROTOCOL §4.11): three nodes on one NATS and one
 * PostgreSQL database fire each tick exactly once, and a node killed with
 * SIGKILL at a tick's due time neither loses that tick nor doubles it.
 * Without NATS or PostgreSQL: fails under CI, skipped elsewhere, saying why.
 */
import { describe, expect, it } from 'vitest';
import type { AgentdClient } from '../../src/client/index.ts';
import type { ScheduleInfo } from '../../src/shared/wire/schedules.ts';
import { assignPartitions, partitionOf } from '../../src/shared/partitions.ts';
import { testClient, testDaemon, waitFor, type Daemon } from '../helpers/daemon.ts';
import { settled as settledOn } from '../helpers/cluster.ts';
import { needPostgres, testDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { NATS_URL, needNats, testClusterName } from '../helpers/nats.ts';

const skip = (await needNats()) ?? (await needPostgres());
const PARTITIONS = 16;
const LEASE_MS = 2_000;
const SLOW = 240_000;

function node(db: TestDatabase, name: string, nodeName: string): Promise<Daemon> {
  return testDaemon({
    config: { agents: { assistant: { model: 'echo' } }, cluster: { name, partitions: PARTITIONS, lease_ms: LEASE_MS } },
    args: ['--store', db.url, '--cluster', NATS_URL, '--node', nodeName],
  });
}

/** A source whose fired pair node `a` owns with all three nodes up and after `c` is gone, so no fired turn is lost with c. */
function sourceKeptByA(tag: string): string {
  const three = assignPartitions(PARTITIONS, ['a', 'b', 'c']);
  const two = assignPartitions(PARTITIONS, ['a', 'b']);
  for (let i = 0; ; i++) {
    const p = partitionOf('assistant', `event:${tag}-${i}`, PARTITIONS);
    if (three[p] === 'a' && two[p] === 'a') return `${tag}-${i}`;
  }
}

async function schedules(c: AgentdClient): Promise<ScheduleInfo[]> {
  return ((await c.request('list_schedules', {})).schedule_list as { schedules: ScheduleInfo[] }).schedules;
}

async function userMessages(c: AgentdClient, source: string): Promise<string[]> {
  const h = await c.request('get_conversation_history', { agent: 'assistant', sender: `event:${source}` }).catch(() => null);
  if (h === null) return [];
  return (h.conversation_history as { messages: { role: string; content: string }[] }).messages.filter((m) => m.role === 'user').map((m) => m.content);
}

/** Every turn fired on `source` so far, once a sentinel published after them (queued behind them) is stored. */
async function settledTurns(c: AgentdClient, source: string): Promise<string[]> {
  const sentinel = `sentinel-${Math.random()}`;
  await c.request('publish_event', { source, payload: sentinel });
  await waitFor(async () => (await userMessages(c, source)).includes(sentinel), 'the sentinel turn', 30_000);
  return (await userMessages(c, source)).filter((m) => m !== sentinel);
}

describe.skipIf(skip !== null)(`schedules in a cluster${skip === null ? '' : ` (skipped: ${skip})`}`, () => {
  it('each tick fires exactly once over three nodes, across a SIGKILL of one at a due time', async () => {
    const db = await testDatabase();
    const name = testClusterName();
    const [a, b, c] = [await node(db, name, 'a'), await node(db, name, 'b'), await node(db, name, 'c')];
    const [ca, cb, cc] = [await testClient(a), await testClient(b), await testClient(c)];
    await settledOn([ca, cb, cc], ['a', 'b', 'c'], PARTITIONS);
    const shots = sourceKeptByA('shots');
    const ticks = sourceKeptByA('ticks');
    await ca.subscribe(shots, 'assistant');
    await ca.subscribe(ticks, 'assistant');
    await waitFor(async () => (await cb.subscriptions()).length === 2 && (await cc.subscriptions()).length === 2, 'every node to hold the subscriptions');

    // One-shots a second apart, made on different nodes; node c dies at the due time of the fourth.
    const first = Date.now() + 8_000;
    const makers = [ca, cb, cc];
    for (let i = 0; i < 7; i++) {
      await makers[i % 3]!.request('create_schedule', { name: `shot-${i}`, source: shots, payload: `shot-${i}`, at: new Date(first + i * 1000).toISOString() });
    }
    const every = (await cb.request('create_schedule', { name: 'every', source: ticks, payload: 'tick', every_ms: 1000 })).schedule as ScheduleInfo;
    await waitFor(() => Date.now() >= first + 3 * 1000, 'the fourth one-shot to come due', 30_000);
    await c.stop('SIGKILL');
    await waitFor(async () => (await schedules(ca)).every((s) => !s.name.startsWith('shot-')), 'every one-shot to fire', 60_000);

    // Stop the periodic schedule half-way between two ticks, with its count of recorded fires.
    const created = Date.parse(every.created_at);
    await waitFor(() => (Date.now() - created) % 1000 > 400 && (Date.now() - created) % 1000 < 600, 'half-way between ticks');
    const [recorded] = (await schedules(cb)).filter((s) => s.name === 'every');
    await cb.request('delete_schedule', { name: 'every' });
    expect(recorded!.fires).toBeGreaterThanOrEqual(Math.floor((Date.now() - created) / 1000) - 2);

    const shotTurns = await settledTurns(ca, shots);
    expect([...shotTurns].sort()).toEqual(['shot-0', 'shot-1', 'shot-2', 'shot-3', 'shot-4', 'shot-5', 'shot-6']);
    const tickTurns = await settledTurns(ca, ticks);
    expect(tickTurns.length).toBe(recorded!.fires);
  }, SLOW);
});
