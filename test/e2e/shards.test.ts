/** A crashed shard is replaced; its turns end with an error; other shards are untouched. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shardOf } from '../../src/shared/hash.ts';
import { cleanup, collect, startDaemon, waitFor, type Daemon, waitRunning, testClient } from '../helpers/daemon.ts';
import { end } from '../helpers/events.ts';

const CRASH = 'crash-this-shard-now';
let d: Daemon;
beforeAll(async () => {
  d = await startDaemon({
    workers: 2,
    env: { AGENTD_TEST_CRASH_TOKEN: CRASH },
    config: { agents: { slow: { model: 'echo', echo: { delay_ms: 30 } }, assistant: { model: 'echo' } } },
  });
});
afterAll(() => cleanup(d));

/**
 * 2000 words at 30 ms each: a turn that runs for a minute, so it is still
 * running when the crash lands, however loaded the machine.
 */
const LONG_WORDS = 2000;
const LONG = Array.from({ length: LONG_WORDS }, (_, i) => `w${i}`).join(' ');

/** Starts a collection now and marks its rejection handled: an assertion failing first must not leave it unhandled. */
function settled<T>(p: Promise<T>): Promise<T> {
  p.catch(() => {});
  return p;
}

function senderOn(shard: number, agent: string, prefix: string): string {
  for (let i = 0; ; i++) if (shardOf(agent, `${prefix}${i}`, 2) === shard) return `${prefix}${i}`;
}

describe('a crashed shard', () => {
  it('ends its running and queued turns with an error, leaves the other shard alone, and serves the pair again', async () => {
    const c = await testClient(d);
    const a = senderOn(0, 'slow', 'a');
    const b = senderOn(1, 'slow', 'b');
    const crashPair = senderOn(0, 'assistant', 'c');

    await c.send('slow', 'history before', { sender: a });
    const running = settled(collect(c.stream('slow', LONG, { sender: a })));
    const queued = settled(collect(c.stream('slow', 'queued turn', { sender: a })));
    const other = settled(collect(c.stream('slow', 'one two three four five six seven eight', { sender: b })));
    await waitFor(async () => {
      const r = await c.request('list_active_conversations', { agent: 'slow' });
      const convs = (r.active_conversations as { conversations: { sender: string; running: boolean; queued: number; message_count: number }[] }).conversations;
      // b's short turn may already have ended on a slow machine: the other shard is left alone either way.
      return convs.some((x) => x.sender === a && x.running && x.queued === 1) && convs.some((x) => x.sender === b && (x.running || x.message_count === 2));
    }, 'turns running on both shards');

    const crashed = await collect(c.stream('assistant', CRASH, { sender: crashPair }));
    expect(crashed.map((e) => e.type)).toEqual(['start', 'end']);
    expect(end(crashed)).toMatchObject({ stop_reason: 'error', error: expect.stringMatching(/shard crashed/) });

    const [r, q, o] = await Promise.all([running, queued, other]);
    expect(end(r)).toMatchObject({ stop_reason: 'error', error: expect.stringMatching(/shard crashed/) });
    expect(q.map((e) => e.type)).toEqual(['start', 'end']);
    expect(end(q).stop_reason).toBe('error');
    expect(end(o).stop_reason).toBe('text');
    expect(o.filter((e) => e.type === 'chunk')).toHaveLength(8);

    // The replacement shard serves the pair from storage: the turn before the crash is
    // there, the two that died with the shard are not (their `end` was an error).
    const after = await c.send('slow', 'fresh start', { sender: a });
    expect(after.content).toBe('fresh start');
    expect(after.usage.prompt_tokens).toBe(2 + 2 + 2);
    expect((await c.stats()).workers).toBe(2);
    // The other shard kept its conversation.
    const bAfter = await c.send('slow', 'again', { sender: b });
    expect(bAfter.usage.prompt_tokens).toBe(8 + 8 + 1);
  });

  it('a send in flight on a crashing shard answers 500', async () => {
    const c = await testClient(d);
    const a = senderOn(1, 'slow', 's');
    const crashPair = senderOn(1, 'assistant', 'z');
    const pending = settled(c.send('slow', LONG, { sender: a }));
    await waitRunning(c, 'slow', a);
    const crash = settled(collect(c.stream('assistant', CRASH, { sender: crashPair })));
    await expect(pending).rejects.toMatchObject({ code: 500, message: expect.stringMatching(/shard crashed/) });
    expect(end(await crash)).toMatchObject({ stop_reason: 'error', error: expect.stringMatching(/shard crashed/) });
  });
});
