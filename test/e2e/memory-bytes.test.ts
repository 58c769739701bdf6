/**
 * `memory_bytes`: the histories shards keep in memory stay within a byte
 * budget however long conversations get; idle ones beyond it come back from
 * storage whole (the model and `get_conversation_history` both see everything).
 */
import { describe, expect, it } from 'vitest';
import type { AgentdClient } from '../../src/client/index.ts';
import { testClient, testDaemon } from '../helpers/daemon.ts';

const CONFIG = { agents: { assistant: { model: 'echo' } } };
const BUDGET = 40_000;
const PAIRS = 6;
const TURNS = 8;
const WORDS = 20;

/** A turn's content: WORDS words of ten characters, so each message is about 420 bytes against the budget. */
const content = (sender: string, turn: number): string =>
  Array.from({ length: WORDS }, (_, w) => `${sender}t${turn}w${w}`.padEnd(10, 'x')).join(' ');

const stats = async (c: AgentdClient): Promise<{ conversation_bytes: number; active_conversations: number }> =>
  (await c.request('get_stats', {})).stats as { conversation_bytes: number; active_conversations: number };

describe('memory_bytes', () => {
  it('keeps the histories in memory under the budget, and evicted ones come back whole', async () => {
    const d = await testDaemon({ workers: 2, config: { ...CONFIG, memory_bytes: BUDGET } });
    const c = await testClient(d);
    const senders = Array.from({ length: PAIRS }, (_, i) => `b${i}`);
    let peak = 0;
    for (let t = 0; t < TURNS; t++) {
      for (const sender of senders) {
        await c.send('assistant', content(sender, t), { sender });
        // A turn's reply comes after its shard evicted, so this is a barrier, not a race.
        peak = Math.max(peak, (await stats(c)).conversation_bytes);
      }
    }
    // PAIRS x TURNS x 2 messages of ~420 bytes is ~40 KB per pair: far more than the budget in all.
    expect(peak).toBeGreaterThan(BUDGET / 4);
    expect(peak).toBeLessThanOrEqual(BUDGET);
    expect((await stats(c)).active_conversations).toBeLessThan(PAIRS);

    for (const sender of senders) {
      const h = (await c.request('get_conversation_history', { agent: 'assistant', sender })).conversation_history as { messages: { role: string; content: string }[] };
      const users = h.messages.filter((m) => m.role === 'user').map((m) => m.content);
      expect(users).toEqual(Array.from({ length: TURNS }, (_, t) => content(sender, t)));
      expect(h.messages).toHaveLength(2 * TURNS);
      // The model sees the whole history again: every earlier word (both sides) plus the new one.
      const r = await c.send('assistant', 'again', { sender });
      expect(r.usage.prompt_tokens).toBe(2 * TURNS * WORDS + 1);
    }
  });

  it('counts each conversation in list_active_conversations', async () => {
    const d = await testDaemon({ workers: 1, config: CONFIG });
    const c = await testClient(d);
    await c.send('assistant', content('one', 0), { sender: 'one' });
    const list = ((await c.request('list_active_conversations', {})).active_conversations as { conversations: { sender: string; memory_bytes: number }[] }).conversations;
    const bytes = list.find((x) => x.sender === 'one')!.memory_bytes;
    // Two messages (the question and its echo), each its text at two bytes a character plus overhead.
    expect(bytes).toBeGreaterThanOrEqual(2 * 2 * content('one', 0).length);
    expect((await stats(c)).conversation_bytes).toBe(bytes);
  });
});
