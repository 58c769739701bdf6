/**
 * Pipelined publishes to many subscriptions: 200 publishes to 100
 * subscriptions are 20,000 fired turns. They start a slice per event-loop
 * turn on main (the fire queue) and reach each shard's inbox, which handles
 * its messages a slice per event-loop turn and answers
 * `list_active_conversations` as soon as it arrives. So while the flood
 * runs, that question and `ping` are answered, a bystander's turn ends
 * normally, and no shard is taken for stalled.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { frameOf, FLAG_LAST } from '../../src/shared/codec.ts';
import { collect, testClient, testDaemon, waitFor } from '../helpers/daemon.ts';
import { RawConn } from '../helpers/raw.ts';
import { end } from '../helpers/events.ts';
import type { AgentdClient } from '../../src/client/index.ts';

const SUBSCRIPTIONS = 100;
const PUBLISHES = 200;

async function storedMessages(c: AgentdClient): Promise<number> {
  const r = await c.request('list_conversations', {});
  return (r.conversation_list as { conversations: { message_count: number }[] }).conversations.reduce((n, x) => n + x.message_count, 0);
}

describe('a flood of pipelined publishes', () => {
  it('leaves list_active_conversations and ping answered, and a bystander turn ends normally', { timeout: 300_000 }, async () => {
    const agents: Record<string, unknown> = {};
    for (let i = 0; i < SUBSCRIPTIONS; i++) agents[`a${i}`] = { model: 'echo' };
    const d = await testDaemon({ workers: 2, config: { agents } });
    const c = await testClient(d);
    const probe = await testClient(d);
    for (let i = 0; i < SUBSCRIPTIONS; i++) await c.subscribe('flood', `a${i}`);

    const raw = await RawConn.open(d.socketPath);
    onTestFinished(() => raw.close());
    const replies = (): number => raw.frames.filter((f) => f.last).length;
    raw.write(Buffer.concat(Array.from({ length: PUBLISHES }, (_, i) => frameOf(i + 1, FLAG_LAST, { publish_event: { source: 'flood', payload: `event ${i}` } }))));
    await raw.until((fs) => fs.length > 0, 'the first publish reply');

    // Barrier: the flood is under way. The probe is answered while the fired turns still run or wait.
    const bystander = collect(c.stream('a0', 'a bystander on a flooded shard', { sender: 'bystander' }));
    bystander.catch(() => {}); // awaited below; a failure before then must not also surface as unhandled
    const active = await probe.request('list_active_conversations', {});
    await probe.ping();
    const repliedByThen = replies();
    const conversations = (active.active_conversations as { conversations: { queued: number; running: boolean }[] }).conversations;
    expect(conversations.some((x) => x.running || x.queued > 0)).toBe(true);

    expect(end(await bystander).stop_reason).toBe('text');
    await raw.until(() => replies() === PUBLISHES, 'every publish reply', 120_000);
    expect(raw.frames.filter((f) => f.last).every((f) => f.body.published?.fired === SUBSCRIPTIONS)).toBe(true);
    await waitFor(async () => (await storedMessages(c)) === 2 * SUBSCRIPTIONS * PUBLISHES + 2, 'every fired turn to be stored', 240_000);
    const stats = await probe.stats();
    expect(stats.shard_stalls).toBe(0);
    expect(stats.queued_turns_dropped).toBe(0);
    console.log(`publish flood: ${repliedByThen} of ${PUBLISHES} publishes answered when list_active_conversations and ping were`);
  });
});
