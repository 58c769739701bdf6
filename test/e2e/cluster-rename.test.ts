/**
 * `rename_agent` in a cluster: renamed through one node, the agent's
 * conversations (shared in PostgreSQL, cached by whichever node owned each
 * pair) are read under the new name through the other node, every node
 * knows the new name and forgets the old, and the conversations go on.
 * Without NATS or PostgreSQL: fails under CI, skipped elsewhere.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import type { AgentdClient } from '../../src/client/index.ts';
import { testDaemon, waitFor } from '../helpers/daemon.ts';
import { settled } from '../helpers/cluster.ts';
import { needPostgres, testDatabase } from '../helpers/postgres.ts';
import { NATS_URL, needNats, testClusterName } from '../helpers/nats.ts';

const skip = (await needNats()) ?? (await needPostgres());
const PARTITIONS = 8;
const AGENTS = { writer: { model: 'echo' } };

describe.skipIf(skip !== null)('rename_agent in a cluster', () => {
  it('renamed through one node, the conversations are the new name\'s on every node', async () => {
    const db = await testDatabase();
    const cluster = testClusterName();
    const names = ['a', 'b'];
    const nodes = await Promise.all(names.map((name) => testDaemon({
      config: { agents: AGENTS, cluster: { name: cluster, partitions: PARTITIONS, lease_ms: 2_000 } },
      args: ['--store', db.url, '--cluster', NATS_URL, '--node', name],
    })));
    const [ca, cb]: AgentdClient[] = await Promise.all(nodes.map((d) => d.client()));
    onTestFinished(() => Promise.all([ca!.close(), cb!.close()]).then(() => undefined));
    await settled([ca!, cb!], names, PARTITIONS);
    const senders = Array.from({ length: 6 }, (_, i) => `s${i}`);
    // Through b, so b and a both hold some of these conversations in memory (each pair at its owner).
    for (const sender of senders) await cb!.send('writer', `hello from ${sender}`, { sender });
    const before = await Promise.all(senders.map((sender) => cb!.call('get_conversation_history', { agent: 'writer', sender })));

    expect((await ca!.renameAgent('writer', 'editor')).name).toBe('editor');
    await waitFor(async () => (await cb!.listAgents()).map((x) => x.name).join() === 'editor', 'b knows the new name');
    const after = await Promise.all(senders.map((sender) => cb!.call('get_conversation_history', { agent: 'editor', sender })));
    expect(after).toEqual(before.map((h) => ({ ...h, agent: 'editor' })));
    await expect(cb!.call('get_conversation_history', { agent: 'writer', sender: 's0' })).rejects.toMatchObject({ code: 404 });
    for (const sender of senders) await cb!.send('editor', 'again', { sender });
    const counts = await ca!.listConversations({ agent: 'editor' });
    expect(counts.map((c) => c.message_count)).toEqual(senders.map(() => 4));
    expect(await ca!.listConversations({ agent: 'writer' })).toEqual([]);
  }, 300_000);
});
