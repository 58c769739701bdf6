/**
 * Memory proportional to the request (issue 11, finding 3): one 16 MiB
 * stream of 8M two-byte words raised the daemon's resident memory from 112 MB
 * to 1.5 GB, and its reading client was cut off at the 64 MiB unsent-output
 * limit after 219 KB. The same stream must now arrive whole on a connection
 * that stays open, in coalesced frames, with the daemon's peak resident
 * memory (VmHWM, all threads, reset just before the request) growing by less
 * than 4.5x the request, and by less than 5x once a search that matches it
 * has run. The daemon runs as users run it, through bin/agentd and so under
 * its malloc settings (bin/malloc-defaults.sh).
 *
 * Measured on the 2-core machine, 2026-12-02: this test 2.6-3.3x at `end` and
 * 2.7-3.3x after the search, alone and beside two busy loops;
 * bench/big-stream-memory.ts side by side, 2.65-3.15x through bin/agentd
 * against 3.95-4.56x (7.5x after a search) under glibc's malloc defaults,
 * where freed 16 MiB blocks stayed in the threads' arenas. What is at the
 * peak, for 16 MiB: the request bytes in shared memory (1x, main keeps them to
 * store a stalled turn), the request as a string in the shard (1x), SQLite's
 * copy of the bound value and of the row it builds (2x), and
 * buffers V8 has not yet collected (main's socket reads; the shard's output
 * buffers go back to it for reuse once written, src/main/hosts/output-returns.ts).
 * The commit's own cost is held by a deterministic test
 * (test/unit/store-commit-memory.test.ts). After `end` a storage thread
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
const MAX_GROWTH_PER_BYTE = 4.5;
const MAX_GROWTH_AFTER_SEARCH = 5;

describe('a big stream', () => {
  it(`${SIZE_MIB} MiB of two-byte words arrive whole, in coalesced frames, to a reading client; peak memory grows < ${MAX_GROWTH_PER_BYTE}x the request, < ${MAX_GROWTH_AFTER_SEARCH}x after a search`, { timeout: 240_000 }, async () => {
    const d = await testDaemon({ config: { max_body_bytes: SIZE_MIB * MIB + 1024, agents: { assistant: { model: 'echo' } } } });
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
    console.log(`big stream: ${SIZE_MIB} MiB, ${frames} frames, VmHWM ${(before / MIB).toFixed(0)} -> ${(after / MIB).toFixed(0)} MiB (+${(growth / MIB).toFixed(0)} MiB, ${(growth / (SIZE_MIB * MIB)).toFixed(1)}x)`);
    expect(growth).toBeLessThan(MAX_GROWTH_PER_BYTE * SIZE_MIB * MIB);
    // The connection was never cut: it still answers.
    await expect(c.ping()).resolves.toBeUndefined();
    // A search that matches the message ranks it, without holding its 8M words as strings.
    const hits = (await c.request('search_sessions', { query: 'w' })).session_hits as { hits: { sender: string }[] };
    expect(hits.hits.map((h) => h.sender)).toContain('big');
    const searched = peakResident(d.proc.pid!) - before;
    console.log(`big stream: after one search +${(searched / MIB).toFixed(0)} MiB, ${(searched / (SIZE_MIB * MIB)).toFixed(1)}x`);
    expect(searched).toBeLessThan(MAX_GROWTH_AFTER_SEARCH * SIZE_MIB * MIB);
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
