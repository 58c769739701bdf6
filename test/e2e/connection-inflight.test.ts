/**
 * One client cannot stall a shard or fill the daemon's memory by pipelining:
 * a connection holds at most `max_inflight_per_connection` requests in
 * flight, and past it each gets 429 at once. A bystander on the same shard
 * is served all along, and the shard is never taken for stalled.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { frameOf, FLAG_LAST } from '../../src/shared/codec.ts';
import { testClient, testDaemon } from '../helpers/daemon.ts';
import { RawConn } from '../helpers/raw.ts';
import { resetPeak, statusBytes } from '../helpers/resident-memory.ts';

const MIB = 1024 * 1024;

/** Every request in one write, as a pipelining client sends them. */
function pipeline(raw: RawConn, count: number, body: (i: number) => unknown): void {
  raw.write(Buffer.concat(Array.from({ length: count }, (_, i) => frameOf(i + 1, FLAG_LAST, body(i)))));
}

describe('max_inflight_per_connection', () => {
  it('refuses a connection\'s requests past the limit with 429 at once; a bystander on the same shard finishes its turn', { timeout: 60_000 }, async () => {
    const MAX = 200;
    const SENT = 1_000;
    const d = await testDaemon({
      workers: 1, // every pair on the one shard
      config: {
        max_inflight_per_connection: MAX,
        agents: { slow: { model: 'echo', echo: { delay_ms: 1000 } }, assistant: { model: 'echo' } },
      },
    });
    const bystander = await testClient(d);
    await bystander.send('assistant', 'warm up', { sender: 'warm' });
    const before = resetPeak(d.proc.pid!);
    const raw = await RawConn.open(d.socketPath);
    onTestFinished(() => raw.close());
    // 100 words at 1 s each: none of these turns can end while the test runs (the barrier is the connection's close).
    const words = Array.from({ length: 100 }, (_, i) => `w${i}`).join(' ');
    pipeline(raw, SENT, (i) => ({ stream: { agent: 'slow', sender: `s${i % 10}`, content: words, ephemeral: true } }));
    const refused = (): number => raw.frames.filter((f) => f.last && f.body.error?.code === 429).length;
    await raw.until(() => refused() === SENT - MAX, `${SENT - MAX} refusals`, 30_000);
    const error = raw.frames.find((f) => f.body.error?.code === 429)!.body.error;
    expect(error.message).toBe(`too many requests in flight on this connection: the limit is ${MAX} (config key max_inflight_per_connection)`);
    // The first MAX were taken: each of them started, none was refused.
    const refusedIds = new Set(raw.frames.filter((f) => f.body.error?.code === 429).map((f) => f.id));
    expect([...refusedIds].every((id) => id > MAX)).toBe(true);

    const events: { type: string; stop_reason?: string }[] = [];
    for await (const ev of bystander.stream('assistant', 'still served', { sender: 'bystander' })) events.push(ev as { type: string });
    expect(events.at(-1)).toMatchObject({ type: 'end', stop_reason: 'text' });
    const stats = await bystander.stats();
    expect(stats.shard_stalls).toBe(0);
    expect((stats.limits as Record<string, number>).max_inflight_per_connection).toBe(MAX);
    const growth = statusBytes(d.proc.pid!, 'VmHWM') - before;
    console.log(`inflight budget: ${SENT} pipelined streams, ${refused()} refused, VmHWM +${(growth / MIB).toFixed(1)} MiB`);
    // The unbounded daemon grew by about 22 KB per pipelined stream; MAX of them are held here.
    expect(growth).toBeLessThan(64 * MIB);
    expect(d.stderr()).not.toContain('stalled');
  });

  it('refuses a bad setting with a clear error', async () => {
    await expect(testDaemon({ config: { max_inflight_per_connection: 0 } })).rejects.toThrow(/max_inflight_per_connection must be an integer >= 1/);
  });
});
