/** Bounded work (issue 11): a chain of fired turns has a budget; a conversation's queue has a limit. */
import { describe, expect, it } from 'vitest';
import type { AgentdClient, AgentEvent } from '../../src/client/index.ts';
import { collect, testClient, testDaemon, waitFor, waitRunning } from '../helpers/daemon.ts';
import { end } from '../helpers/events.ts';

async function messageCount(c: AgentdClient, agent: string, sender: string): Promise<number> {
  const r = await c.request('list_active_conversations', { agent, sender });
  return (r.active_conversations as { conversations: { message_count: number }[] }).conversations[0]?.message_count ?? 0;
}

describe('the fan-out budget', () => {
  it('three self-subscriptions fire at most max_chain_turns turns for one send, and observers see one chain_cut', async () => {
    const MAX = 20;
    const d = await testDaemon({ config: { max_chain_turns: MAX, agents: { amp: { model: 'echo' } } } });
    const c = await testClient(d);
    const watcher = await testClient(d);
    const seen: AgentEvent[] = [];
    const watching = (async () => {
      for await (const ev of watcher.events()) seen.push(ev);
    })();
    watching.catch(() => {});
    await watcher.ping(); // the subscription is in place
    for (let i = 0; i < 3; i++) await c.subscribe('agent:amp:done', 'amp');

    await c.send('amp', 'go');
    // 3 + 9 fired, then 8 of the 27 at depth 3 (20 in all); the other 19 and all 24 of depth 4 are dropped.
    const pair = 'event:agent:amp:done';
    await waitFor(async () => (await c.stats()).chain_turns_dropped === 19 + 24 && (await messageCount(c, 'amp', pair)) === 2 * MAX, 'the chain to end');
    await c.ping();
    expect(await messageCount(c, 'amp', pair)).toBe(2 * MAX);
    await waitFor(() => seen.some((e) => e.type === 'chain_cut'), 'the chain_cut event');
    expect(seen.filter((e) => e.type === 'chain_cut')).toEqual([
      expect.objectContaining({ agent: 'amp', sender: pair, content: expect.stringMatching(/max_chain_turns \(20\)/) }),
    ]);
    // A new send starts a new chain with a full budget.
    await c.send('amp', 'again');
    await waitFor(async () => (await messageCount(c, 'amp', pair)) === 4 * MAX, 'the second chain');
  });
});

describe('the queued-turn limit', () => {
  const LONG = Array.from({ length: 2000 }, (_, i) => `w${i}`).join(' ');

  it("refuses a client's turn beyond max_queued_turns with 429 and drops a fired one, counted", async () => {
    const d = await testDaemon({ config: { max_queued_turns: 2, agents: { slow: { model: 'echo', echo: { delay_ms: 30 } } } } });
    const c = await testClient(d);
    const running = collect(c.stream('slow', LONG, { sender: 'q' }));
    const queued = [c.send('slow', 'one', { sender: 'q' }), c.send('slow', 'two', { sender: 'q' })];
    running.catch(() => {});
    queued.forEach((p) => p.catch(() => {}));
    await expect(c.send('slow', 'three', { sender: 'q' })).rejects.toMatchObject({ code: 429 });
    // Another conversation is not affected.
    expect((await c.send('slow', 'elsewhere', { sender: 'other' })).content).toBe('elsewhere');
    await c.kill('slow', 'q');
    expect(end(await running).stop_reason).toBe('cancelled');
    await Promise.allSettled(queued);
    expect((await c.send('slow', 'room again', { sender: 'q' })).content).toBe('room again');

    await c.subscribe('tick', 'slow');
    expect(await c.publish('tick', LONG)).toBe(1);
    await waitRunning(c, 'slow', 'event:tick');
    expect(await c.publish('tick', 'a')).toBe(1);
    expect(await c.publish('tick', 'b')).toBe(1);
    expect(await c.publish('tick', 'c')).toBe(0);
    expect((await c.stats()).queued_turns_dropped).toBe(1);
    await c.kill('slow', 'event:tick');
  });
});
