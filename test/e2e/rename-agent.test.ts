/**
 * `rename_agent`: the agent keeps its conversations (reloaded from the store
 * under the new name, on whatever shard the new name hashes the pair to),
 * the answers it gave as a guest, its subscriptions and webhook filters; the
 * old name is gone; a running turn, a taken name, an unknown agent and an
 * invalid name are refused without changing anything.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, collect, startDaemon, waitRunning, type Daemon } from '../helpers/daemon.ts';
import type { AgentdClient } from '../../src/client/index.ts';

const CONFIG = {
  agents: {
    writer: { model: 'echo' },
    other: { model: 'echo' },
    slow: { model: 'echo', echo: { delay_ms: 1_000 } },
  },
};

let d: Daemon;
let c: AgentdClient;

const history = (agent: string, sender: string): Promise<unknown> => c.call('get_conversation_history', { agent, sender });

beforeAll(async () => {
  d = await startDaemon({ workers: 4, config: CONFIG });
  c = await d.client();
});
afterAll(async () => {
  await c.close();
  await cleanup(d);
});

describe('rename_agent', () => {
  it('keeps conversations, guest answers, subscriptions and webhook filters under the new name', async () => {
    // Many senders: under the new name some pairs hash to other shards than before.
    const senders = Array.from({ length: 8 }, (_, i) => `s${i}`);
    for (const sender of senders) {
      await c.send('writer', `first from ${sender}`, { sender });
      await c.send('writer', `second from ${sender}`, { sender });
    }
    await c.compact('writer', { sender: 's0' });
    await collect(c.stream('other', 'a guest answers', { sender: 'g', guest: 'writer' }));
    const toWriter = await c.subscribe('ping.src', 'writer');
    const onDone = await c.subscribe('agent:writer:done', 'other');
    await c.createWebhook({ name: 'hook', url: 'http://127.0.0.1:9/none', events: ['turn_end'], agents: ['writer', 'other'], secret: 'a-long-enough-s3cret-value' });
    const before = await Promise.all(senders.map((s) => history('writer', s)));

    const info = await c.renameAgent('writer', 'editor');
    expect(info.name).toBe('editor');
    expect((await c.listAgents()).map((a) => a.name)).toEqual(['editor', 'other', 'slow']);
    const after = await Promise.all(senders.map((s) => history('editor', s)));
    expect(after).toEqual(before.map((h) => ({ ...(h as object), agent: 'editor' })));
    await expect(history('writer', 's1')).rejects.toMatchObject({ code: 404 });
    const guest = (await c.call('get_conversation_history', { agent: 'other', sender: 'g' })).messages;
    expect(guest.find((m) => m.role === 'assistant')?.agent).toBe('editor');
    expect(await c.subscriptions()).toEqual(expect.arrayContaining([
      { ...toWriter, target_agent: 'editor' },
      { ...onDone, source: 'agent:editor:done' },
    ]));
    expect((await c.webhooks()).find((w) => w.name === 'hook')?.agents).toEqual(['editor', 'other']);
    const stored = (await c.listConversations({ agent: 'editor', sender: 's0' }))[0]!;
    // The conversation goes on where it was: its summary and messages are the model's context under the new name.
    await c.send('editor', 'third', { sender: 's0' });
    expect((await c.listConversations({ agent: 'editor', sender: 's0' }))[0]!.message_count).toBe(stored.message_count + 2);
    expect(await c.publish('ping.src', 'fired')).toBe(1);
    expect(await c.listConversations({ agent: 'writer' })).toEqual([]);
  });

  it('refuses an unknown agent, a taken or invalid name, and an agent with a running turn', async () => {
    await expect(c.renameAgent('nobody', 'x')).rejects.toMatchObject({ code: 404 });
    await expect(c.renameAgent('editor', 'other')).rejects.toMatchObject({ code: 409, message: 'agent "other" exists already' });
    await expect(c.renameAgent('editor', '.hidden')).rejects.toMatchObject({ code: 400, message: expect.stringMatching(/new_name must be/) });
    const running = collect(c.stream('slow', 'one two three four five six', { sender: 'busy' }));
    await waitRunning(c, 'slow', 'busy');
    await expect(c.renameAgent('slow', 'sloth')).rejects.toMatchObject({ code: 409, message: expect.stringMatching(/turns running or queued \(sender "busy"\)/) });
    // Nothing changed: the agent still answers under its name.
    expect((await c.getAgent('slow')).name).toBe('slow');
    await c.kill('slow', 'busy');
    await running;
    expect((await c.renameAgent('slow', 'sloth')).name).toBe('sloth');
    expect((await c.history('sloth', 'busy')).messages.length).toBeGreaterThan(0);
  });
});
