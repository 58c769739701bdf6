/**
 * The storage contract (src/storage/contract.ts), the same tests for
 * every backend: what a shard and a storage thread rely on, whatever holds
 * the data. Each test gets a store of its own. Search is in
 * storage-contract-search.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { Message } from '../../src/models/types.ts';
import type { DaemonStorage } from '../../src/storage/contract.ts';
import { StopReason, zeroUsage } from '../../src/shared/protocol.ts';
import { assistant, backends, contractFixture, outcomeOf, ref, user } from '../helpers/storage-contract.ts';

/** Waits until the wall clock's millisecond (what a stored timestamp holds) has moved on. */
async function nextMillisecond(): Promise<void> {
  const start = new Date().toISOString();
  while (new Date().toISOString() === start) await new Promise((r) => setImmediate(r));
}

describe.each(backends)('storage contract: $name', (backend) => {
  const f = contractFixture(backend);
  if (f === null) return;
  it('writes and loads a turn with every message field', async () => {
    await f.fresh();
    const messages: Message[] = [
      user('what is the weather'),
      { role: 'assistant', content: '', tool_calls: [{ id: 'c1', name: 'weather', arguments: '{"city":"Oslo"}' }] },
      { role: 'tool', content: 'rain', tool_call_id: 'c1', name: 'weather', is_error: true },
      { role: 'assistant', content: 'it rains', agent: 'guest' },
      { role: 'assistant', content: '', stop_reason: 'stalled' },
    ];
    const conv = ref('a', 's');
    expect(await f.shard.exists('a', 's')).toBe(false);
    expect(await f.shard.load('a', 's')).toBeNull();
    expect(await f.shard.writeTurns([{ conv, messages }])).toEqual([null]);
    expect(conv.dbId).toBeTypeOf('number');
    const loaded = (await f.shard.load('a', 's'))!;
    expect(loaded).toMatchObject({ id: conv.dbId, title: 'what is the weather', summary: null, summaryUpto: 0, messageCount: 5 });
    expect(loaded.recent).toEqual(messages);
    expect(await f.shard.allMessages(conv.dbId!)).toEqual(messages);
    expect(await f.shard.exists('a', 's')).toBe(true);
    // A second turn appends after the stored messages and keeps the title.
    conv.stored = 5;
    expect(await f.shard.writeTurns([{ conv, messages: [user('again'), assistant('again')] }])).toEqual([null]);
    expect((await f.shard.load('a', 's'))!).toMatchObject({ title: 'what is the weather', messageCount: 7 });
    const [listed] = await f.daemon.listConversations('a', 's');
    expect(listed).toMatchObject({ agent: 'a', sender: 's', title: 'what is the weather', message_count: 7 });
  });

  it('group commit: a bad turn fails alone, the others commit and get their row ids', async () => {
    await f.fresh();
    const first = ref('a', 'one');
    await f.shard.writeTurns([{ conv: first, messages: [user('hello'), assistant('hello')] }]);
    const good = ref('a', 'two');
    const duplicate = { ...ref('a', 'one', 1, first.dbId) }; // idx 1 is stored already
    const alsoGood = ref('a', 'three');
    const results = await f.shard.writeTurns([
      { conv: good, messages: [user('two'), assistant('two')] },
      { conv: duplicate, messages: [user('clash')] },
      { conv: alsoGood, messages: [user('three')], outcome: outcomeOf('t3', 'three') },
    ]);
    expect(results[0]).toBeNull();
    expect(results[1]).toBeInstanceOf(Error);
    expect(results[2]).toBeNull();
    expect(good.dbId).toBeTypeOf('number');
    expect(alsoGood.dbId).toBeTypeOf('number');
    expect((await f.shard.load('a', 'one'))!.recent.map((m) => m.content)).toEqual(['hello', 'hello']);
    expect((await f.shard.load('a', 'two'))!.messageCount).toBe(2);
    expect(await f.shard.outcome(alsoGood.dbId!, 't3')).toMatchObject({ finalText: 'three' });
  });

  it('a failed turn gets no row id, and a turn id is stored once per conversation', async () => {
    await f.fresh();
    const first = ref('a', 'new');
    const second = ref('a', 'new'); // the same new pair twice in one batch: the second cannot take index 0 again
    const results = await f.shard.writeTurns([
      { conv: first, messages: [user('x'), assistant('x')], outcome: outcomeOf('t', 'x') },
      { conv: second, messages: [user('y')] },
    ]);
    expect(results[0]).toBeNull();
    expect(results[1]).toBeInstanceOf(Error);
    expect(first.dbId).toBeTypeOf('number');
    expect(second.dbId).toBeNull();
    const retry = ref('a', 'new', 2, first.dbId);
    const [dup] = await f.shard.writeTurns([{ conv: retry, messages: [user('z')], outcome: outcomeOf('t', 'again') }]);
    expect(dup).toBeInstanceOf(Error);
    expect((await f.shard.load('a', 'new'))!.recent.map((m) => m.content)).toEqual(['x', 'x']);
    expect(await f.shard.outcome(first.dbId!, 't')).toMatchObject({ finalText: 'x' });
  });

  it('a turn for a conversation deleted meanwhile fails and writes nothing', async () => {
    await f.fresh();
    const conv = ref('a', 's');
    await f.shard.writeTurns([{ conv, messages: [user('one')] }]);
    const id = conv.dbId!;
    await f.shard.delete(id);
    const [err] = await f.shard.writeTurns([{ conv: { ...conv, stored: 1 }, messages: [user('two')] }]);
    expect(err).toBeInstanceOf(Error);
    expect(await f.shard.allMessages(id)).toEqual([]);
    expect(await f.shard.exists('a', 's')).toBe(false);
  });

  it('looks up a stored outcome by turn id', async () => {
    await f.fresh();
    const conv = ref('a', 's');
    await f.shard.writeTurns([{ conv, messages: [user('hi'), assistant('hi')], outcome: outcomeOf('turn-1', 'hi') }]);
    expect(await f.shard.outcome(conv.dbId!, 'turn-1')).toEqual(outcomeOf('turn-1', 'hi'));
    expect(await f.shard.outcome(conv.dbId!, 'turn-2')).toBeNull();
  });

  it('a compaction summary: load returns the messages from summaryUpto on, allMessages every one', async () => {
    await f.fresh();
    const id = await f.conversation('a', 's', [user('m0'), assistant('m1'), user('m2'), assistant('m3')]);
    await f.shard.setSummary(id, 'the gist', 2);
    const loaded = (await f.shard.load('a', 's'))!;
    expect(loaded).toMatchObject({ summary: 'the gist', summaryUpto: 2, messageCount: 4 });
    expect(loaded.recent.map((m) => m.content)).toEqual(['m2', 'm3']);
    expect((await f.shard.allMessages(id)).map((m) => m.content)).toEqual(['m0', 'm1', 'm2', 'm3']);
    await f.shard.setSummary(id, 'everything', 4);
    expect((await f.shard.load('a', 's'))!).toMatchObject({ summary: 'everything', summaryUpto: 4, messageCount: 4, recent: [] });
  });

  it('deleting a conversation takes its messages, outcomes and search entries', async () => {
    await f.fresh();
    const conv = ref('a', 's');
    await f.shard.writeTurns([{ conv, messages: [user('quince jam'), assistant('ok')], outcome: outcomeOf('t', 'ok') }]);
    expect(await f.q('quince')).toHaveLength(1);
    await f.shard.delete(conv.dbId!);
    expect(await f.shard.load('a', 's')).toBeNull();
    expect(await f.shard.allMessages(conv.dbId!)).toEqual([]);
    expect(await f.shard.outcome(conv.dbId!, 't')).toBeNull();
    expect(await f.q('quince')).toEqual([]);
    expect(await f.daemon.listConversations(null, null)).toEqual([]);
  });

  it('records a stalled turn once, and not at all when its turn id is stored', async () => {
    await f.fresh();
    const stalled = { agent: 'a', sender: 's', content: 'slow one', guest: 'g', turnId: 'st-1', error: 'the shard stalled' };
    await f.shard.recordStalled(stalled);
    const loaded = (await f.shard.load('a', 's'))!;
    expect(loaded.recent).toEqual([user('slow one'), { role: 'assistant', content: '', stop_reason: StopReason.Stalled, agent: 'g' }]);
    expect(await f.shard.outcome(loaded.id, 'st-1')).toEqual({
      turnId: 'st-1', agent: 'g', model: '', stopReason: StopReason.Stalled, error: 'the shard stalled', usage: zeroUsage(), finalText: '',
    });
    await f.shard.recordStalled(stalled);
    expect((await f.shard.load('a', 's'))!.messageCount).toBe(2);
    await f.shard.recordStalled({ ...stalled, turnId: null, content: 'another' });
    expect((await f.shard.allMessages(loaded.id)).map((m) => m.content)).toEqual(['slow one', '', 'another', '']);
  });

  it('lists conversations most recently updated first, filtered by agent and sender', async () => {
    await f.fresh();
    const one = ref('a', 'one');
    await f.shard.writeTurns([{ conv: one, messages: [user('1')] }]);
    await f.conversation('a', 'two', [user('2')]);
    await f.conversation('b', 'one', [user('3')]);
    await nextMillisecond(); // timestamps have millisecond resolution: the update must be later, not tied
    one.stored = 1;
    await f.shard.writeTurns([{ conv: one, messages: [user('1 again')] }]);
    const all = await f.daemon.listConversations(null, null);
    expect(all[0]).toMatchObject({ agent: 'a', sender: 'one', message_count: 2 });
    expect(all).toHaveLength(3);
    expect((await f.daemon.listConversations('a', null)).map((c) => c.sender).sort()).toEqual(['one', 'two']);
    expect((await f.daemon.listConversations(null, 'one')).map((c) => c.agent).sort()).toEqual(['a', 'b']);
  });

  describe('the daemon store', () => {
    it('seeds the agents once, and two daemons preparing at once migrate and seed exactly once', async () => {
      await f.openStore();
      const [one, two] = await Promise.all([f.store.daemon(), f.store.daemon()]);
      const seeds = { assistant: { model: 'echo' } } as unknown as Parameters<DaemonStorage['prepare']>[0];
      const states = await Promise.all([one.prepare(seeds), two.prepare(seeds)]);
      expect(states.map((s) => s.seededNow).sort()).toEqual([false, true]);
      for (const s of states) expect(s.agents).toEqual([{ name: 'assistant', config: JSON.stringify({ model: 'echo' }) }]);
      const again = await (await f.store.daemon()).prepare({});
      expect(again).toMatchObject({ seededNow: false, subscriptions: [] });
      expect(again.agents.map((a) => a.name)).toEqual(['assistant']);
    });

    it('refuses a store with a newer schema and leaves it untouched', async () => {
      await f.openStore();
      await (await f.store.daemon()).prepare({});
      await f.store.forgeNewerSchema();
      const before = await f.store.fingerprint();
      await expect((await f.store.daemon()).prepare({ x: {} as never })).rejects.toThrow(/newer than this agentd understands.*not modified/);
      expect(await f.store.fingerprint()).toBe(before);
    });

    it('a once subscription is consumed by whoever deletes it: 1, then 0', async () => {
      await f.fresh();
      const id = await f.daemon.insertSubscription('agent:a', 'b', true);
      const other = await f.daemon.insertSubscription('agent:a', 'c', false);
      expect(other).toBeGreaterThan(id);
      const state = await (await f.store.daemon()).prepare({});
      expect(state.subscriptions).toEqual([
        { id, source: 'agent:a', target_agent: 'b', once: true },
        { id: other, source: 'agent:a', target_agent: 'c', once: false },
      ]);
      const counts = await Promise.all([f.daemon.deleteSubscriptions([id]), f.daemon.deleteSubscriptions([id])]);
      expect(counts.sort()).toEqual([0, 1]);
      expect(await f.daemon.deleteSubscriptions([])).toBe(0);
    });

    it('deleting an agent takes its conversations, messages, search entries and subscriptions', async () => {
      await f.fresh();
      await f.daemon.upsertAgent('gone', '{"model":"echo"}');
      await f.daemon.upsertAgent('kept', '{"model":"echo"}');
      await f.daemon.upsertAgent('kept', '{"model":"echo","max_iterations":3}');
      await f.conversation('gone', 's', [user('rhubarb'), assistant('ok')]);
      await f.conversation('kept', 's', [user('rhubarb'), assistant('ok')]);
      await f.daemon.insertSubscription('agent:kept', 'gone', false);
      const kept = await f.daemon.insertSubscription('agent:gone', 'kept', false);
      await f.daemon.deleteAgent('gone');
      expect((await f.q('rhubarb')).map((h) => h.agent)).toEqual(['kept']);
      expect(await f.shard.exists('gone', 's')).toBe(false);
      const state = await (await f.store.daemon()).prepare({});
      expect(state.agents).toEqual([{ name: 'kept', config: '{"model":"echo","max_iterations":3}' }]);
      expect(state.subscriptions.map((s) => s.id)).toEqual([kept]);
      await f.daemon.maintain(1 << 20);
    });
  });

  it('a turn whose write resolved is there after the process holding the store dies', async () => {
    await f.fresh();
    const conv = ref('a', 's');
    expect(await f.shard.writeTurns([{ conv, messages: [user('durable'), assistant('durable')], outcome: outcomeOf('d', 'durable') }])).toEqual([null]);
    await f.store.crash();
    const reopened = await f.store.conversations();
    const loaded = (await reopened.load('a', 's'))!;
    expect(loaded.recent.map((m) => m.content)).toEqual(['durable', 'durable']);
    expect(await reopened.outcome(loaded.id, 'd')).toMatchObject({ finalText: 'durable' });
  });
});
