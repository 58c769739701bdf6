/**
 * One big publish to many subscriptions. A payload past
 * `max_event_payload_bytes` gets 413 and fires nothing; one within it fires
 * every subscription, the payload crosses to the shards once (unit:
 * fan-out-sharing), a healthy client's ping answers meanwhile, and once the
 * fired turns have ended and their conversations left memory, what the
 * daemon holds is back within a small multiple of the payload of where it
 * started, not one payload per subscription.
 */
import { describe, expect, it } from 'vitest';
import { testClient, testDaemon, waitFor } from '../helpers/daemon.ts';
import { heldBytes, memoryProbeEnv } from '../helpers/thread-memory.ts';
import { peakResident, resetPeak } from '../helpers/resident-memory.ts';
import type { AgentdClient } from '../../src/client/index.ts';

const MIB = 1024 * 1024;
const SUBSCRIPTIONS = 40;
/** Long words, few of them: the fired turns and their indexing stay quick. */
const payloadOf = (bytes: number): string => `${'x'.repeat(1023)} `.repeat(Math.floor(bytes / 1024));

async function storedMessages(c: AgentdClient): Promise<number> {
  const r = await c.request('list_conversations', {});
  return (r.conversation_list as { conversations: { message_count: number }[] }).conversations.reduce((n, x) => n + x.message_count, 0);
}

describe('a big publish_event to many subscriptions', () => {
  it('is refused with 413 past max_event_payload_bytes, firing nothing, and the connection stays open', async () => {
    const d = await testDaemon({ config: { max_event_payload_bytes: 64 * 1024, agents: { a: { model: 'echo' } } } });
    const c = await testClient(d);
    await c.subscribe('big', 'a');
    await expect(c.publish('big', 'x'.repeat(64 * 1024 + 1))).rejects.toMatchObject({ code: 413, message: expect.stringMatching(/max_event_payload_bytes/) });
    // Counted in UTF-8 bytes: 22,000 three-byte characters are 66,000 bytes.
    await expect(c.publish('big', '€'.repeat(22_000))).rejects.toMatchObject({ code: 413 });
    await expect(c.publish('big', { list: 'y'.repeat(64 * 1024) })).rejects.toMatchObject({ code: 413 });
    expect(await c.publish('big', 'x'.repeat(64 * 1024))).toBe(1);
    expect((await c.stats()).limits).toMatchObject({ max_event_payload_bytes: 64 * 1024 });
    await waitFor(async () => (await storedMessages(c)) === 2, 'the one fired turn');
  });

  it('fires every subscription, ping answers meanwhile, and memory returns near its start', { timeout: 240_000 }, async () => {
    const SIZE = MIB; // the default max_event_payload_bytes
    const agents: Record<string, unknown> = {};
    for (let i = 0; i < SUBSCRIPTIONS; i++) agents[`a${i}`] = { model: 'echo' };
    const probe = memoryProbeEnv();
    // A small memory budget: the fired conversations leave memory once idle (storage keeps them).
    const d = await testDaemon({ workers: 2, env: probe.env, config: { memory_bytes: 4 * MIB, agents } });
    const c = await testClient(d);
    const pinger = await testClient(d);
    for (let i = 0; i < SUBSCRIPTIONS; i++) await c.subscribe('big', `a${i}`);
    expect(await c.publish('big', 'warm up')).toBe(SUBSCRIPTIONS);
    await waitFor(async () => (await storedMessages(c)) === 2 * SUBSCRIPTIONS, 'the warm-up turns');
    const baseline = await heldBytes(probe.dir);
    const rssStart = resetPeak(d.proc.pid!);

    const published = c.publish('big', payloadOf(SIZE));
    const pongs = [pinger.ping(), pinger.ping(), pinger.ping()];
    expect(await published).toBe(SUBSCRIPTIONS);
    await Promise.all(pongs);
    await waitFor(async () => (await storedMessages(c)) === 4 * SUBSCRIPTIONS, 'every fired turn to be stored', 180_000);
    await pinger.ping();
    expect((await pinger.stats()).shard_stalls).toBe(0);
    const peak = peakResident(d.proc.pid!);

    let held = Infinity;
    await waitFor(async () => (held = await heldBytes(probe.dir)) <= baseline + 4 * SIZE, 'held memory to return near its start', 120_000).catch(() => {});
    console.log(`publish fan-out: ${SUBSCRIPTIONS} x ${SIZE / MIB} MiB: held ${(baseline / MIB).toFixed(1)} -> ${(held / MIB).toFixed(1)} MiB; VmRSS ${(rssStart / MIB).toFixed(0)} -> peak ${(peak / MIB).toFixed(0)} MiB`);
    expect(held).toBeLessThanOrEqual(baseline + 4 * SIZE);
  });
});
