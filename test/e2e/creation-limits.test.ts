/**
 * Limits on what clients can create (max_agents, max_subscriptions,
 * max_observers per connection), each answered with 429 while the daemon
 * keeps serving; and agent changes reaching every shard as one-agent deltas.
 */
import { rmSync } from 'node:fs';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { AgentdClient } from '../../src/client/index.ts';
import { shardOf } from '../../src/shared/hash.ts';
import { collect, makeHome, runAgentd, testClient, testDaemon } from '../helpers/daemon.ts';
import { end, text } from '../helpers/events.ts';

const ECHO = { model: 'echo' };

/** Waits until the daemon has read everything sent before on this connection. */
const barrier = (c: AgentdClient): Promise<void> => c.ping();

describe('max_agents', () => {
  it('refuses the agent past the limit with 429 naming max_agents; deleting one frees its slot', async () => {
    const d = await testDaemon({ config: { max_agents: 3, agents: { assistant: ECHO } } });
    const c = await testClient(d);
    await c.request('create_agent', { name: 'a1', config: ECHO });
    await c.request('create_agent', { name: 'a2', config: ECHO });
    const refused = c.request('create_agent', { name: 'a3', config: ECHO });
    await expect(refused).rejects.toMatchObject({ code: 429 });
    await expect(refused).rejects.toThrow(/too many agents: the limit is 3 \(config key max_agents\)/);
    await expect(c.request('get_agent', { name: 'a3' })).rejects.toMatchObject({ code: 404 });
    expect(await c.stats()).toMatchObject({ registered_agents: 3, limits: { max_agents: 3 } });
    // Still serving: a turn of an existing agent runs.
    expect(text(await collect(c.stream('a1', 'still here')))).toBe('still here');

    await c.request('delete_agent', { name: 'a2' });
    await c.request('create_agent', { name: 'a3', config: ECHO });
    expect(text(await collect(c.stream('a3', 'new one')))).toBe('new one');
  });

  it('creates sent at once never pass the limit together', async () => {
    const d = await testDaemon({ config: { max_agents: 3, agents: { assistant: ECHO } } });
    const c = await testClient(d);
    const results = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => c.request('create_agent', { name: `burst${i}`, config: ECHO })));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(2);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 429 });
    expect(await c.stats()).toMatchObject({ registered_agents: 3 });
  });
});

describe('max_subscriptions', () => {
  it('refuses the subscription past the limit with 429 naming max_subscriptions; unsubscribing frees its slot', async () => {
    const d = await testDaemon({ config: { max_subscriptions: 2 } });
    const c = await testClient(d);
    const first = await c.subscribe('one', 'assistant');
    await c.subscribe('two', 'assistant');
    const refused = c.subscribe('three', 'assistant');
    await expect(refused).rejects.toMatchObject({ code: 429 });
    await expect(refused).rejects.toThrow(/too many subscriptions: the limit is 2 \(config key max_subscriptions\)/);
    expect((await c.subscriptions()).map((s) => s.source)).toEqual(['one', 'two']);
    expect(await c.stats()).toMatchObject({ subscriptions: 2, limits: { max_subscriptions: 2 } });

    await c.unsubscribe(first.id);
    await c.subscribe('three', 'assistant');
    expect((await c.subscriptions()).map((s) => s.source)).toEqual(['two', 'three']);
    // Subscriptions sent at once never pass the limit together.
    await c.unsubscribe((await c.subscriptions())[0]!.id);
    const burst = await Promise.allSettled(Array.from({ length: 4 }, (_, i) => c.subscribe(`burst${i}`, 'assistant')));
    expect(burst.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(await c.subscriptions()).toHaveLength(2);
  });
});

describe('max_observers', () => {
  it('refuses the event stream past the per-connection limit with 429; closing one frees its slot; other connections are not affected', async () => {
    const d = await testDaemon({ config: { max_observers: 2 } });
    const c = await testClient(d);
    const s1 = c.openStream('subscribe_events');
    const s2 = c.openStream('subscribe_events');
    const s3 = c.openStream('subscribe_events');
    await expect(s3.next()).rejects.toMatchObject({ code: 429, message: expect.stringMatching(/the limit is 2 \(config key max_observers\)/) });
    expect(await c.stats()).toMatchObject({ observers: 2, limits: { max_observers_per_connection: 2 } });

    // Another connection has its own allowance.
    const other = await testClient(d);
    const o1 = other.openStream('subscribe_events');
    await barrier(other);
    expect(await other.stats()).toMatchObject({ observers: 3 });

    // Closing one of c's streams lets a new one in, and it receives events.
    await c.request('close', { request: s1.id });
    expect((await s1.next()).value).toEqual({ closed: {} });
    expect((await s1.next()).done).toBe(true);
    const s4 = c.openStream('subscribe_events');
    await barrier(c);
    await c.send('assistant', 'observed');
    const first = await s4.next();
    expect(first.value).toMatchObject({ agent_event: { agent: 'assistant' } });
    await c.request('close', { request: s2.id });
    await c.request('close', { request: s4.id });
    await other.request('close', { request: o1.id });
    expect(await c.stats()).toMatchObject({ observers: 0 });
  });
});

describe('get_stats limits', () => {
  it('reports the defaults', async () => {
    const d = await testDaemon();
    const c = await testClient(d);
    expect((await c.stats()).limits).toMatchObject({ max_agents: 1000, max_subscriptions: 100000, max_observers_per_connection: 64, max_connections: 4096, max_queued_turns: 1000, max_chain_turns: 1000, max_elements: 100_000 });
  });

  it('a limit that is not a positive integer stops start-up with a message naming the key', async () => {
    const home = makeHome({ max_observers: 0 });
    onTestFinished(() => rmSync(home, { recursive: true, force: true }));
    const r = await runAgentd(['--home', home, '--tcp', 'off']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/max_observers must be an integer >= 1, got 0/);
  });
});

describe('agent changes reach every shard as deltas', () => {
  const SHARDS = 3;

  /** One sender per shard for pairs of `agent`. */
  function sendersPerShard(agent: string): string[] {
    const out: (string | undefined)[] = Array.from({ length: SHARDS }, () => undefined);
    for (let k = 0; out.includes(undefined); k++) {
      const s = `s${k}`;
      out[shardOf(agent, s, SHARDS)] ??= s;
    }
    return out as string[];
  }

  it('an agent created after many others is usable, updated and deleted on every shard', async () => {
    const d = await testDaemon({ workers: SHARDS });
    const c = await testClient(d);
    await Promise.all(Array.from({ length: 40 }, (_, i) => c.request('create_agent', { name: `filler${i}`, config: ECHO })));
    await c.request('create_agent', { name: 'late', config: { model: 'echo', max_iterations: 1 } });

    // Pairs of `late` on each shard: the shard knows it, with its config.
    for (const sender of sendersPerShard('late')) {
      expect(text(await collect(c.stream('late', 'hello late', { sender })))).toBe('hello late');
      expect(end(await collect(c.stream('late', '/call peers {}', { sender }))).stop_reason).toBe('max_iterations');
    }
    // As a guest on each shard (the pair's host agent picks the shard).
    const hosts = sendersPerShard('assistant');
    for (const sender of hosts) {
      expect(end(await collect(c.stream('assistant', '/call peers {}', { sender, guest: 'late' }))).stop_reason).toBe('max_iterations');
    }

    await c.request('update_agent', { name: 'late', config: { max_iterations: 4 } });
    for (const sender of sendersPerShard('late')) {
      expect(end(await collect(c.stream('late', '/call peers {}', { sender }))).stop_reason).toBe('text');
    }
    for (const sender of hosts) {
      expect(end(await collect(c.stream('assistant', '/call peers {}', { sender, guest: 'late' }))).stop_reason).toBe('text');
    }

    // Deleted: main refuses it, and no shard still holds it (a guest turn reaches the shard, which looks it up).
    await c.request('delete_agent', { name: 'late' });
    await expect(collect(c.stream('late', 'gone?', { sender: 's0' }))).rejects.toMatchObject({ code: 404 });
    for (const sender of hosts) {
      const last = end(await collect(c.stream('assistant', 'gone?', { sender, guest: 'late' })));
      expect(last).toMatchObject({ stop_reason: 'error', error: 'unknown guest agent "late"' });
    }
    // The others were untouched.
    expect(text(await collect(c.stream('filler7', 'still here', { sender: hosts[0]! })))).toBe('still here');
  });
});
