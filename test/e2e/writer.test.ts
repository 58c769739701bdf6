/**
 * The turn writer thread (SQLite): one thread commits every shard's turns.
 * If it crashes or freezes, every turn waiting on it ends with a clear error
 * (nothing hangs, nothing half-stored), main starts a replacement, and every
 * shard commits through it; the daemon still shuts down cleanly.
 */
import { describe, expect, it } from 'vitest';
import { shardOf } from '../../src/shared/hash.ts';
import type { AgentdClient, StreamEvent } from '../../src/client/index.ts';
import { collect, TEST_STORE, testClient, testDaemon, waitFor } from '../helpers/daemon.ts';
import { end } from '../helpers/events.ts';

const CRASH = 'crash-the-writer-now';
const STALL = 'freeze-the-writer-now';
/** A writer frozen this long is replaced (the shards' stall time). */
const STALL_MS = 3_000;
const LOST = /turn writer thread (stopped before it answered|was replaced before it answered|is being replaced); the turn was not stored/;

function senderOn(shard: number, prefix: string): string {
  for (let i = 0; ; i++) if (shardOf('assistant', `${prefix}${i}`, 2) === shard) return `${prefix}${i}`;
}

async function history(c: AgentdClient, sender: string): Promise<string[]> {
  const r = await c.request('get_conversation_history', { agent: 'assistant', sender });
  return (r.conversation_history as { messages: { content: string }[] }).messages.map((m) => m.content);
}

async function stored(c: AgentdClient, sender: string): Promise<boolean> {
  const r = await c.request('list_conversations', { agent: 'assistant', sender });
  return (r.conversation_list as { conversations: unknown[] }).conversations.length > 0;
}

/** Sends turns until one is stored again (the replacement writer is up); a failed one fails for the lost writer. */
async function waitForWriter(c: AgentdClient, prefix: string): Promise<void> {
  let n = 0;
  await waitFor(async () => {
    const e = end(await collect(c.stream('assistant', 'probe', { sender: `${prefix}${n++}` })));
    if (e.stop_reason !== 'error') return true;
    expect(e.error).toMatch(LOST);
    return false;
  }, 'a replacement turn writer', 30_000);
}

describe.skipIf(TEST_STORE !== 'sqlite')('the turn writer thread', () => {
  it('crashes: every turn waiting on it ends with an error and is not stored, the others are; a replacement serves every shard', async () => {
    const d = await testDaemon({ workers: 2, env: { AGENTD_TEST_WRITER_CRASH_TOKEN: CRASH }, config: { agents: { assistant: { model: 'echo' } } } });
    const c = await testClient(d);
    const keep = [senderOn(0, 'k'), senderOn(1, 'k')];
    for (const s of keep) expect((await c.send('assistant', 'before', { sender: s })).content).toBe('before');

    // The crash turn, with turns on both shards around it: each either commits (before the crash) or fails, none hangs.
    const around = Array.from({ length: 20 }, (_, i) => `r${i}`);
    const turns = [...around.slice(0, 10), 'crasher', ...around.slice(10)].map((s) =>
      collect(c.stream('assistant', s === 'crasher' ? CRASH : `turn of ${s}`, { sender: s })).then((evs: StreamEvent[]) => [s, end(evs)] as const),
    );
    const ended = await Promise.all(turns);
    const crashEnd = ended.find(([s]) => s === 'crasher')![1];
    expect(crashEnd).toMatchObject({ stop_reason: 'error', error: expect.stringMatching(LOST) });
    for (const [s, e] of ended) {
      if (e.stop_reason === 'error') {
        expect(e.error).toMatch(LOST);
        expect(await stored(c, s)).toBe(false);
      } else {
        expect(await history(c, s)).toEqual([`turn of ${s}`, `turn of ${s}`]);
      }
    }

    await waitForWriter(c, 'probe');
    expect(d.stderr()).toMatch(/turn writer lost/);
    // Both shards commit through the replacement, after their earlier turns.
    for (const s of keep) {
      expect((await c.send('assistant', 'after', { sender: s })).content).toBe('after');
      expect(await history(c, s)).toEqual(['before', 'before', 'after', 'after']);
    }
    // The pair whose turn crashed the writer goes on from nothing.
    await c.send('assistant', 'fresh', { sender: 'crasher' });
    expect(await history(c, 'crasher')).toEqual(['fresh', 'fresh']);
    expect(await d.stop()).toEqual({ code: 0, signal: null });
  });

  it('freezes: main replaces it after the stall time, the waiting turn ends with an error, and turns are stored again', async () => {
    const d = await testDaemon({
      workers: 2,
      env: { AGENTD_TEST_WRITER_STALL_TOKEN: STALL },
      config: { shard_stall_ms: STALL_MS, agents: { assistant: { model: 'echo' } } },
    });
    const c = await testClient(d);
    const frozen = end(await collect(c.stream('assistant', STALL, { sender: 'frozen' })));
    expect(frozen).toMatchObject({ stop_reason: 'error', error: expect.stringMatching(LOST) });
    expect(d.stderr()).toMatch(/the turn writer stalled/);
    await waitForWriter(c, 'probe');
    for (const s of [senderOn(0, 'k'), senderOn(1, 'k')]) {
      await c.send('assistant', 'stored', { sender: s });
      expect(await history(c, s)).toEqual(['stored', 'stored']);
    }
    expect(await d.stop()).toEqual({ code: 0, signal: null });
  });
});
