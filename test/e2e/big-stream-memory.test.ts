/**
 * Memory proportional to the request (issue 11, finding 3): one 16 MiB
 * stream of 8M two-byte words raised the daemon's resident memory from 112 MB
 * to 1.5 GB, and its reading client was cut off at the 64 MiB unsent-output
 * limit after 219 KB. The same stream must now arrive whole on a connection
 * that stays open, in coalesced frames, with the daemon's peak resident
 * memory (VmHWM, all threads, reset just before the request) growing by less
 * than MAX_GROWTH_PER_BYTE times the request, before and after a search that
 * matches it. The daemon runs as users run it, through bin/agentd and so
 * under its malloc settings (bin/malloc-defaults.sh).
 *
 * What is at the peak, for 16 MiB: the request bytes in shared memory (1x,
 * main keeps them to store a stalled turn), the request as a string in the
 * shard (1x), SQLite's copy of the bound value and of the row it builds (2x),
 * and buffers V8 has not yet collected (main's socket reads; the shard's
 * output buffers go back to it for reuse once written,
 * src/main/hosts/output-returns.ts). On a busy machine the reading client (this
 * test's process) falls behind, so up to the whole output also waits in main,
 * and collection lags: the growth then ranges higher. The commit's own cost is
 * held by a deterministic test (test/unit/store-commit-memory.test.ts), the
 * search's by test/unit/search-memory.test.ts. After `end` a storage thread
 * indexes the two messages; a search reads a big text in slices
 * (search-texts.ts). AGENTD_BIG_STREAM_MIB picks another size (small sizes
 * are dominated by fixed costs).
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { setTimeout as pause } from 'node:timers/promises';
import { testClient, testDaemon } from '../helpers/daemon.ts';
import { RawConn } from '../helpers/raw.ts';
import { peakResident, resetPeak } from '../helpers/resident-memory.ts';

const MIB = 1024 * 1024;
const SIZE_MIB = Number(process.env.AGENTD_BIG_STREAM_MIB ?? 16);
/**
 * The largest growth measured, 6.4x (after the search, in a full CI run on
 * the 2-core machine; bench/results/test-memory-bounds.md has the spread),
 * times a margin of 1.25: how busy the machine is, and the machine itself,
 * move this figure (the same build measured 2.6-3.3x on one quiet machine and
 * 4.3-5.2x on another), not the code. What still fails: output held per word
 * (the original 1.5 GB for 16 MiB, about 90x), or a change that holds two
 * more copies of the request at once. Single extra copies are the
 * deterministic tests' to catch (store-commit-memory, search-memory).
 */
const MAX_GROWTH_PER_BYTE = 8;

describe('a big stream', () => {
  it(`${SIZE_MIB} MiB of two-byte words arrive whole, in coalesced frames, to a reading client; peak memory grows < ${MAX_GROWTH_PER_BYTE}x the request, before and after a search`, { timeout: 240_000 }, async () => {
    // Scoring 8M words takes seconds on a busy 2-core machine: this test bounds memory, not the search's time (search-budget.test does).
    const config = { max_body_bytes: SIZE_MIB * MIB + 1024, search_timeout_ms: 120_000, agents: { assistant: { model: 'echo' } } };
    const d = await testDaemon({ config });
    const c = await testClient(d);
    await c.send('assistant', 'warm up', { sender: 'warm' });
    const before = resetPeak(d.proc.pid!);
    const content = 'w '.repeat((SIZE_MIB * MIB) / 2);

    const parts: string[] = [];
    let frames = 0;
    let endEvent: unknown = null;
    for await (const ev of c.stream('assistant', content, { sender: 'big' })) {
      frames++;
      if (ev.type === 'chunk') parts.push(ev.content);
      if (ev.type === 'end') endEvent = ev;
    }
    const after = peakResident(d.proc.pid!);
    expect(endEvent).toMatchObject({ stop_reason: 'text' });
    expect(parts.join('') === content).toBe(true);
    // Merged: far fewer frames than words (8M words for 16 MiB).
    expect(frames).toBeLessThan(content.length / 2 / 50);
    const growth = after - before;
    console.log(`big stream: ${SIZE_MIB} MiB, ${frames} frames, VmHWM ${(before / MIB).toFixed(0)} -> ${(after / MIB).toFixed(0)} MiB (+${(growth / MIB).toFixed(1)} MiB, ${(growth / (SIZE_MIB * MIB)).toFixed(2)}x)`);
    expect(growth).toBeLessThan(MAX_GROWTH_PER_BYTE * SIZE_MIB * MIB);
    // The connection was never cut: it still answers.
    await expect(c.ping()).resolves.toBeUndefined();
    // A search that matches the message ranks it, without holding its 8M words as strings.
    const hits = (await c.request('search_sessions', { query: 'w' })).session_hits as { hits: { sender: string }[] };
    expect(hits.hits.map((h) => h.sender)).toContain('big');
    const searched = peakResident(d.proc.pid!) - before;
    console.log(`big stream: after one search +${(searched / MIB).toFixed(1)} MiB, ${(searched / (SIZE_MIB * MIB)).toFixed(2)}x`);
    expect(searched).toBeLessThan(MAX_GROWTH_PER_BYTE * SIZE_MIB * MIB);
    onTestFinished(() => c.close());
  });
});

describe('a reader that keeps reading', () => {
  it('is not cut off at the hard limit while a faster producer keeps it behind', { timeout: 120_000 }, async () => {
    const d = await testDaemon({ config: { high_water_bytes: 65_536, hard_limit_bytes: 262_144, agents: { assistant: { model: 'echo' } } } });
    const raw = await RawConn.open(d.socketPath);
    onTestFinished(() => raw.close());
    const content = 'w '.repeat(4_000_000); // 8 MB of output against a 256 KiB limit
    raw.socket.pause();
    raw.send(1, { stream: { agent: 'assistant', sender: 'slow-reader', content } });
    // Read one socket read at a time, one every 50 ms (at most ~1.3 MB/s): far
    // behind the producer, yet always taking something.
    const ended = (): boolean => raw.frames.some((f) => f.last);
    while (!ended()) {
      if (raw.socket.destroyed) break;
      await new Promise<void>((r) => {
        const closed = (): void => r();
        raw.socket.once('data', () => {
          raw.socket.pause();
          raw.socket.off('close', closed); // one listener per read would pile up past Node's warning
          r();
        });
        raw.socket.once('close', closed);
        raw.socket.resume();
      });
      await pause(50);
    }
    const text = raw.frames.map((f) => (f.body.stream?.chunk?.content as string | undefined) ?? '').join('');
    expect(raw.frames.at(-1)?.body.stream?.end).toMatchObject({ stop_reason: 'text' });
    expect(text === content).toBe(true);
  });
});
