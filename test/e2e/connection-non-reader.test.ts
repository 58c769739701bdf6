/**
 * A client that pipelines requests for big replies and reads none of them
 * (40 `get_conversation_history` of a 4 MiB conversation) is cut once its
 * unsent replies pass `hard_limit_bytes`, however big each reply frame is;
 * the daemon's memory comes back near where it started, the shard is never
 * taken for stalled, and a bystander on the same shard is served meanwhile.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { frameOf, FLAG_LAST } from '../../src/shared/codec.ts';
import { testClient, testDaemon, waitFor } from '../helpers/daemon.ts';
import { RawConn } from '../helpers/raw.ts';
import { statusBytes } from '../helpers/resident-memory.ts';

const MIB = 1024 * 1024;

/** Every request in one write, as a pipelining client sends them. */
function pipeline(raw: RawConn, count: number, body: (i: number) => unknown): void {
  raw.write(Buffer.concat(Array.from({ length: count }, (_, i) => frameOf(i + 1, FLAG_LAST, body(i)))));
}

describe('a connection that reads none of its big replies', () => {
  it('is cut past hard_limit_bytes, its memory is returned, and a bystander is served meanwhile', { timeout: 120_000 }, async () => {
    const BIG = 2 * MIB;
    const d = await testDaemon({
      workers: 1,
      config: { max_body_bytes: BIG + 1024, high_water_bytes: 256 * 1024, hard_limit_bytes: MIB, agents: { assistant: { model: 'echo' } } },
    });
    const bystander = await testClient(d);
    // A conversation of about 4 MiB: a 2 MiB message and its echo.
    await bystander.send('assistant', 'w'.repeat(BIG), { sender: 'big' });
    await bystander.request('get_conversation_history', { agent: 'assistant', sender: 'big' }); // warm the path once
    const start = statusBytes(d.proc.pid!, 'VmRSS');

    const raw = await RawConn.open(d.socketPath);
    onTestFinished(() => raw.close());
    raw.socket.pause(); // never read
    pipeline(raw, 40, () => ({ get_conversation_history: { agent: 'assistant', sender: 'big' } }));
    const r = await bystander.send('assistant', 'still fine', { sender: 'other' });
    expect(r.content).toBe('still fine');
    // The non-reader's own socket, paused, cannot see its end: the daemon's count of connections can.
    await waitFor(async () => ((await bystander.stats()).connections as number) === 1, 'the non-reader to be cut', 30_000);
    await bystander.ping();
    // The shard read the histories one per event-loop turn: its watchdog never took it for stalled.
    expect((await bystander.stats()).shard_stalls).toBe(0);
    // 40 replies of 4 MiB would be 160 MiB held for a peer that reads nothing.
    await waitFor(() => statusBytes(d.proc.pid!, 'VmRSS') < start + 48 * MIB, 'resident memory to come back near its start', 30_000);
    console.log(`non-reader: VmRSS ${(start / MIB).toFixed(0)} -> ${(statusBytes(d.proc.pid!, 'VmRSS') / MIB).toFixed(0)} MiB after the cut`);
  });
});
