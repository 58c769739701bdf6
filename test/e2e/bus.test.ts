/** The event bus and the agent event stream (PROTOCOL §4, Daemon and event bus). */
import { describe, expect, it, onTestFinished } from 'vitest';
import type { AgentdClient } from '../../src/client/index.ts';
import { collect, startDaemon, waitFor, type Daemon, testDaemon, testClient, type DaemonOptions } from '../helpers/daemon.ts';
import { RawConn } from '../helpers/raw.ts';
import { watchEvents } from '../helpers/events.ts';

const CONFIG = { agents: { assistant: { model: 'echo' }, a: { model: 'echo' }, b: { model: 'echo' }, helper: { model: 'echo' } } };

const daemon = (opts: DaemonOptions = {}): Promise<Daemon> => testDaemon({ config: CONFIG, ...opts });
const client = (d: Daemon): Promise<AgentdClient> => testClient(d);

describe('subscriptions', () => {
  it('fire a stored turn for (target, event:SOURCE) with the payload, seen by observers', async () => {
    const d = await daemon();
    const c = await client(d);
    const seen = await watchEvents(await client(d));
    const sub = await c.subscribe('deploy.done', 'assistant');
    expect(sub).toEqual({ id: expect.any(Number), source: 'deploy.done', target_agent: 'assistant', once: false });
    expect(await c.publish('deploy.done', 'build 42 shipped')).toBe(1);
    expect(await c.publish('deploy.other', 'nobody listens')).toBe(0);
    await waitFor(() => seen.some((e) => e.type === 'done'), 'the fired turn to finish');
    const fired = seen.filter((e) => e.sender === 'event:deploy.done');
    expect(fired.map((e) => e.type)).toEqual(['text_start', 'text_delta', 'text_delta', 'text_delta', 'text_end', 'done']);
    expect(fired.at(-1)).toMatchObject({ agent: 'assistant', content: 'build 42 shipped', ephemeral: false });
    expect(Date.parse(fired[0]!.timestamp)).not.toBeNaN();
    const h = await c.request('get_conversation_history', { agent: 'assistant', sender: 'event:deploy.done' });
    expect((h.conversation_history as { messages: unknown[] }).messages).toHaveLength(2);
  });

  it('a once subscription fires exactly once when two connections publish at the same moment', async () => {
    const d = await daemon();
    const c1 = await client(d);
    const c2 = await client(d);
    await c1.subscribe('race', 'assistant', true);
    const results = await Promise.all([c1.publish('race', 'one'), c2.publish('race', 'two'), c1.publish('race', 'three'), c2.publish('race', 'four')]);
    expect(results.reduce((a, b) => a + b, 0)).toBe(1);
    expect(await c1.subscriptions()).toEqual([]);
  });

  it('two agents subscribed to each other stop at depth 8', async () => {
    const d = await daemon();
    const c = await client(d);
    const seen = await watchEvents(await client(d));
    await c.subscribe('kick', 'a');
    await c.subscribe('agent:a:done', 'b');
    await c.subscribe('agent:b:done', 'a');
    expect(await c.publish('kick', 'ping pong')).toBe(1);
    await waitFor(() => d.stderr().includes('deeper than 8'), 'the chain to be cut');
    await c.ping();
    const dones = seen.filter((e) => e.type === 'done');
    expect(dones.map((e) => e.agent)).toEqual(['a', 'b', 'a', 'b', 'a', 'b', 'a', 'b']);
    expect(dones[1]!.sender).toBe('event:agent:a:done');
  });

  it('every finished turn publishes agent:<name>:done with its final text; guest and ephemeral turns do not', async () => {
    const d = await daemon();
    const c = await client(d);
    const seen = await watchEvents(await client(d), 'helper');
    await c.subscribe('agent:assistant:done', 'helper');
    await collect(c.stream('assistant', 'as a guest', { guest: 'b', sender: 'g' }));
    await collect(c.stream('assistant', 'ephemeral', { ephemeral: true }));
    await c.send('assistant', 'the final words');
    await waitFor(() => seen.some((e) => e.type === 'done'), 'helper to run');
    expect(seen.filter((e) => e.type === 'done').map((e) => [e.sender, e.content])).toEqual([['event:agent:assistant:done', 'the final words']]);
  });

  it('done events follow the table: none after the last unsubscribe, again after a new subscribe, and from a shard started anew after a crash', async () => {
    const crash = 'crash-the-shard-for-the-done-test';
    const d = await daemon({ workers: 1, env: { AGENTD_TEST_CRASH_TOKEN: crash } });
    const c = await client(d);
    const seen = await watchEvents(await client(d), 'helper');
    const doneTexts = (): string[] => seen.filter((e) => e.type === 'done').map((e) => e.content as string);
    const sub = await c.subscribe('agent:assistant:done', 'helper');
    await c.send('assistant', 'one');
    await waitFor(() => doneTexts().includes('one'), 'the first done to fire');
    await c.unsubscribe(sub.id);
    await c.send('assistant', 'two');
    await c.subscribe('agent:assistant:done', 'helper');
    await c.send('assistant', 'three');
    await waitFor(() => doneTexts().includes('three'), 'the done after subscribing again');
    // The helper's fired turns run in order on one pair: had 'two' fired, it would be seen before 'three'.
    expect(doneTexts()).toEqual(['one', 'three']);
    await expect(c.send('assistant', crash)).rejects.toThrow(/shard crashed/);
    await c.send('assistant', 'four');
    await waitFor(() => doneTexts().includes('four'), 'the done from the replacement shard');
    expect(doneTexts()).toEqual(['one', 'three', 'four']);
  });

  it('survive a restart, and ids are never reused', async () => {
    const first = await startDaemon({ config: CONFIG });
    const c1 = await first.client();
    const s1 = await c1.subscribe('x', 'assistant');
    const s2 = await c1.subscribe('y', 'assistant', true);
    const s3 = await c1.subscribe('z', 'assistant');
    await c1.unsubscribe(s3.id);
    await c1.close();
    await first.stop();
    const d = await daemon({ home: first.home });
    const c = await client(d);
    expect(await c.subscriptions()).toEqual([s1, s2]);
    const s4 = await c.subscribe('w', 'assistant');
    expect(s4.id).toBeGreaterThan(s3.id);
    expect((await c.stats()).subscriptions).toBe(3);
  });

  it('unknown ids and agents give 404; bad fields 400', async () => {
    const d = await daemon();
    const c = await client(d);
    await expect(c.unsubscribe(999)).rejects.toMatchObject({ code: 404 });
    await expect(c.request('close', { request: 999 })).rejects.toMatchObject({ code: 404 });
    await expect(c.subscribe('x', 'nobody')).rejects.toMatchObject({ code: 404 });
    await expect(c.request('subscribe_events', { agent: 'nobody' })).rejects.toMatchObject({ code: 404 });
    await expect(c.request('subscribe_event', { source: '', target_agent: 'assistant' })).rejects.toMatchObject({ code: 400 });
    await expect(c.request('unsubscribe_event', { id: 'one' })).rejects.toMatchObject({ code: 400 });
    await expect(c.request('publish_event', { payload: 'x' })).rejects.toMatchObject({ code: 400 });
  });
});

describe('the agent event stream', () => {
  it('close ends a subscription with closed {} and LAST', async () => {
    const d = await daemon();
    const raw = await RawConn.open(d.socketPath);
    onTestFinished(() => raw.close());
    raw.send(1, { subscribe_events: {} });
    raw.send(2, { close: { request: 1 } });
    await raw.request(2);
    const frames = await raw.request(1);
    expect(frames).toEqual([{ id: 1, last: true, body: { closed: {} } }]);
    expect(raw.frames.find((f) => f.id === 2)!.body).toEqual({ pong: {} });
  });

  it('filters by agent and carries the real sender, tools and correlation ids', async () => {
    const d = await daemon();
    const c = await client(d);
    const onlyA = await watchEvents(await client(d), 'a');
    const all = await watchEvents(await client(d));
    await c.send('a', 'for a', { sender: 'alice' });
    await c.send('b', 'for b', { sender: 'bob' });
    await collect(c.stream('a', '/call nothing {}', { sender: 'carol', ephemeral: true, correlation_id: 42 }));
    await waitFor(() => all.filter((e) => e.type === 'done').length === 3 && onlyA.filter((e) => e.type === 'done').length === 2, 'three turns');
    expect(new Set(onlyA.map((e) => e.agent))).toEqual(new Set(['a']));
    expect(all.find((e) => e.agent === 'b')!.sender).toBe('bob');
    const tool = all.filter((e) => e.sender === 'carol');
    expect(tool.every((e) => e.ephemeral && e.correlation_id === 42)).toBe(true);
    expect(tool.find((e) => e.type === 'tool_start')!.tool_calls).toEqual([{ id: 'call_1_1', name: 'nothing', arguments: '{}' }]);
    expect(tool.find((e) => e.type === 'tool_result')).toMatchObject({ tool_is_error: true, tool_output: 'unknown tool "nothing"' });
  });

  it('a stalled observer loses events and is told how many; a second observer gets everything; the turn is not slowed', async () => {
    // Not cut as a slow consumer while it waits here: that is observer-non-reader.test.ts.
    const d = await daemon({ config: { ...CONFIG, observer_stall_ms: 600_000 } });
    const c = await client(d);
    const stalled = await RawConn.open(d.socketPath);
    onTestFinished(() => stalled.close());
    stalled.send(1, { subscribe_events: {} });
    stalled.send(2, { ping: {} }); // answered after the subscription is registered
    await stalled.request(2);
    stalled.socket.pause();
    const full = await watchEvents(await client(d));

    // 200 turns of 500 words of 101 bytes: about 10 MB of text in events (merged
    // into few events per turn), far past the stalled observer's bound.
    const turns = 200;
    const words = 500;
    const word = `${'flood'.repeat(20)} `;
    for (let t = 0; t < turns; t++) {
      const r = await c.send('assistant', word.repeat(words), { sender: 'flood' });
      expect(r.content.length).toBe(word.length * words);
    }
    await waitFor(() => full.filter((e) => e.type === 'done' && e.sender === 'flood').length === turns, 'the full observer to see every turn', 20_000);
    // Deltas produced faster than one batch can carry are merged (ChunkCoalescer): all the text, in at most one event per word.
    const deltas = full.filter((e) => e.type === 'text_delta' && e.sender === 'flood');
    expect(deltas.map((e) => e.content).join('') === word.repeat(words).repeat(turns)).toBe(true);
    expect(deltas.length).toBeLessThanOrEqual(turns * words);
    const emittedInFlood = full.filter((e) => e.sender === 'flood').length;

    stalled.socket.resume();
    // Once it reads again it catches up: keep making turns until it sees one whole.
    let later = 0;
    await waitFor(async () => {
      await c.send('assistant', 'after the flood', { sender: `later-${later++}` });
      return stalled.frames.some((f) => f.body.agent_event?.kind === 'done' && f.body.agent_event.sender.startsWith('later-'));
    }, 'the stalled observer to catch up', 20_000);
    await c.ping();
    const events = stalled.frames.map((f) => f.body.agent_event).filter((e) => e !== undefined); // raw frames: the wire's `kind`
    const notes = events.filter((e) => e.kind === 'lagged');
    expect(notes.length).toBeGreaterThan(0);
    for (const n of notes) expect(n.content).toMatch(/^[1-9]\d* events dropped$/);
    // What it received plus what it was told it lost is every event, as far as it has read.
    const lost = notes.reduce((sum, n) => sum + Number(n.content.split(' ')[0]), 0);
    const received = events.length - notes.length;
    const emitted = emittedInFlood + later * 6;
    expect(received + lost).toBeLessThanOrEqual(emitted);
    expect(received + lost).toBeGreaterThan(emittedInFlood);
  });
});
