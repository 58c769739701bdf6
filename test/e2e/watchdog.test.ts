/**
 * Runaway work (issue 11): a frozen shard is replaced and its turn stored as
 * `stalled`; a turn_id makes a retry replay instead of running twice; a crash
 * says whether a lost turn was stored.
 */
import { describe, expect, it } from 'vitest';
import { shardOf } from '../../src/shared/hash.ts';
import type { AgentdClient } from '../../src/client/index.ts';
import { collect, startDaemon, cleanup, testClient, testDaemon, waitRunning } from '../helpers/daemon.ts';
import { end, text, types } from '../helpers/events.ts';
import { onTestFinished } from 'vitest';

/** A shard frozen this long is replaced. */
const STALL_MS = 3_000;
/**
 * Near the per-chunk maximum, burned in one go (AGENTD_TEST_SYNC_BURN, the
 * fault a bug would be): ten chunks keep the shard busy for 9 s, well past
 * STALL_MS. Burned as a client gets it, in slices, it stalls nothing (below).
 */
const BURN = { model: 'echo', echo: { cpu_us: 900_000 } };
const FREEZING = { AGENTD_TEST_SYNC_BURN: '1' };
const TEN_WORDS = 'one two three four five six seven eight nine ten';

function senderOn(shard: number, agent: string, prefix: string, shards = 2): string {
  for (let i = 0; ; i++) if (shardOf(agent, `${prefix}${i}`, shards) === shard) return `${prefix}${i}`;
}

async function history(c: AgentdClient, agent: string, sender: string): Promise<{ role: string; content: string; stop_reason?: string }[]> {
  const r = await c.request('get_conversation_history', { agent, sender });
  return (r.conversation_history as { messages: { role: string; content: string; stop_reason?: string }[] }).messages;
}

describe('the shard watchdog', () => {
  it('replaces a stalled shard, stores its turn as stalled, and the pair goes on (also after a restart)', async () => {
    const config = { shard_stall_ms: STALL_MS, agents: { burn: BURN, assistant: { model: 'echo' } } };
    const d = await startDaemon({ workers: 2, config, env: FREEZING });
    let restarted: Awaited<ReturnType<typeof startDaemon>> | null = null;
    onTestFinished(async () => {
      await d.stop('SIGKILL');
      if (restarted !== null) await cleanup(restarted);
      else await cleanup(d);
    });
    const c = await d.client();
    onTestFinished(() => c.close());
    const s = senderOn(0, 'burn', 'b');
    const neighbour = senderOn(0, 'assistant', 'n');

    const evs = await collect(c.stream('burn', TEN_WORDS, { sender: s, turn_id: 'frozen-1' }));
    expect(types(evs).slice(0, 1)).toEqual(['start']);
    expect(end(evs)).toMatchObject({ stop_reason: 'stalled', stored: true, error: expect.stringMatching(/shard stalled/) });

    // The replacement serves everything again: stats, kill, the neighbour on the same shard.
    expect((await c.stats()).shard_stalls).toBe(1);
    await c.kill('burn', s);
    expect((await c.send('assistant', 'still here', { sender: neighbour })).content).toBe('still here');
    const stalledRecord = [
      { role: 'user', content: TEN_WORDS },
      { role: 'assistant', content: '', stop_reason: 'stalled' },
    ];
    expect(await history(c, 'burn', s)).toEqual(stalledRecord);

    // A retry of the stalled turn replays its outcome instead of freezing the shard again.
    const retry = await collect(c.stream('burn', TEN_WORDS, { sender: s, turn_id: 'frozen-1' }));
    expect(types(retry)).toEqual(['start', 'end']);
    expect(end(retry)).toMatchObject({ stop_reason: 'stalled', replayed: true });
    expect(await history(c, 'burn', s)).toEqual(stalledRecord);

    // The next turn of the pair runs normally (one word: one short burn) and sees the record.
    const next = await c.send('burn', 'fine', { sender: s });
    expect(next.content).toBe('fine');
    expect(next.usage.prompt_tokens).toBe(10 + 0 + 1);
    await c.close();

    // A restart does not run the stalled turn again: the history is as it was.
    await d.stop();
    restarted = await startDaemon({ workers: 2, home: d.home, env: FREEZING });
    const c2 = await restarted.client();
    onTestFinished(() => c2.close());
    expect(await history(c2, 'burn', s)).toEqual([...stalledRecord, { role: 'user', content: 'fine' }, { role: 'assistant', content: 'fine' }]);
    expect((await c2.stats()).shard_stalls).toBe(0);
  });
});

describe('a burning model', () => {
  it('stalls no shard: its neighbours finish normally while it burns past shard_stall_ms', async () => {
    const config = { shard_stall_ms: STALL_MS, agents: { burn: BURN, assistant: { model: 'echo' } } };
    const d = await startDaemon({ workers: 2, config });
    onTestFinished(() => cleanup(d));
    const c = await d.client();
    onTestFinished(() => c.close());
    const burning = c.stream('burn', 'one two three four five', { sender: senderOn(0, 'burn', 'b') });
    // Barrier: the burn has begun before the neighbours send.
    const it = burning[Symbol.asyncIterator]();
    expect((await it.next()).value).toMatchObject({ type: 'start' });
    const neighbours = await Promise.all(
      [0, 1, 2, 3].map(async (i) => {
        const n = await d.client();
        onTestFinished(() => n.close());
        return collect(n.stream('assistant', `neighbour ${i} says hi`, { sender: senderOn(0, 'assistant', `n${i}-`) }));
      }),
    );
    for (const [i, evs] of neighbours.entries()) {
      expect(end(evs)).toMatchObject({ stop_reason: 'text' });
      expect(text(evs)).toBe(`neighbour ${i} says hi`);
    }
    const rest: unknown[] = [];
    for (let r = await it.next(); !r.done; r = await it.next()) rest.push(r.value);
    expect(rest.at(-1)).toMatchObject({ type: 'end', stop_reason: 'text' });
    expect((await c.stats()).shard_stalls).toBe(0);
  });
});

describe('turn_id', () => {
  it('a retried send or stream with a stored turn_id replays its outcome and stores nothing more', async () => {
    const d = await testDaemon();
    const c = await testClient(d);
    const first = await c.request('send', { agent: 'assistant', content: 'only once', sender: 'r', turn_id: 'a-1' });
    const again = await c.request('send', { agent: 'assistant', content: 'only once', sender: 'r', turn_id: 'a-1' });
    // The retry is a run of its own, answered from storage: another run id.
    const { run_id: firstRun, ...firstRest } = first.response as { run_id: string };
    expect(again.response).toEqual({ ...firstRest, replayed: true, run_id: expect.not.stringMatching(firstRun) });

    const streamed = await collect(c.stream('assistant', 'streamed once', { sender: 'r', turn_id: 'a-2' }));
    const replayed = await collect(c.stream('assistant', 'streamed once', { sender: 'r', turn_id: 'a-2' }));
    expect(types(replayed)).toEqual(['start', 'chunk', 'end']);
    expect(text(replayed)).toBe('streamed once');
    expect(end(replayed)).toEqual({ ...end(streamed), replayed: true, seq: 3 });

    // The same turn_id on another pair is another turn.
    expect((await c.send('assistant', 'elsewhere', { sender: 'other', turn_id: 'a-1' })).content).toBe('elsewhere');
    expect(await history(c, 'assistant', 'r')).toEqual([
      { role: 'user', content: 'only once' },
      { role: 'assistant', content: 'only once' },
      { role: 'user', content: 'streamed once' },
      { role: 'assistant', content: 'streamed once' },
    ]);
  });

  it('a turn_id longer than 64 bytes is refused with 400', async () => {
    const d = await testDaemon();
    const c = await testClient(d);
    await expect(c.request('send', { agent: 'assistant', content: 'x', turn_id: 'é'.repeat(33) })).rejects.toMatchObject({ code: 400 });
    await expect(c.request('stream', { agent: 'assistant', content: 'x', turn_id: 7 })).rejects.toMatchObject({ code: 400 });
    expect((await c.request('send', { agent: 'assistant', content: 'x', turn_id: 'é'.repeat(32) })).response).toMatchObject({ content: 'x' });
  });

  it('a crash says whether each lost turn was stored, and a retry with the same turn_id stores it once', async () => {
    const CRASH = 'crash-the-shard';
    const d = await testDaemon({ workers: 2, env: { AGENTD_TEST_CRASH_TOKEN: CRASH }, config: { agents: { slow: { model: 'echo', echo: { delay_ms: 20 } }, assistant: { model: 'echo' } } } });
    const c = await testClient(d);
    const s = senderOn(1, 'slow', 's');
    // 250 words at 20 ms (5 s): the running turn cannot end before the crash reaches its shard on a busy
    // machine (60 words could), and the retry that runs it whole stays short.
    const words = Array.from({ length: 250 }, (_, i) => `w${i}`).join(' ');
    const running = collect(c.stream('slow', words, { sender: s, turn_id: 'lost-1' }));
    const queued = collect(c.stream('slow', 'queued', { sender: s, turn_id: 'lost-2' }));
    running.catch(() => {});
    queued.catch(() => {});
    await waitRunning(c, 'slow', s);
    await collect(c.stream('assistant', CRASH, { sender: senderOn(1, 'assistant', 'z') }));
    expect(end(await running)).toMatchObject({ stop_reason: 'error', stored: 'unknown' });
    expect(end(await queued)).toMatchObject({ stop_reason: 'error', stored: false });

    for (let i = 0; i < 2; i++) expect(end(await collect(c.stream('slow', words, { sender: s, turn_id: 'lost-1' }))).stop_reason).toBe('text');
    const stored = (await history(c, 'slow', s)).filter((m) => m.role === 'user' && m.content === words);
    expect(stored).toHaveLength(1);
  });
});
