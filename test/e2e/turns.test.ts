/** PROTOCOL §4 turns over real sockets: event order, FIFO, parallelism, cancel, on_busy, guests, ephemeral. */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { AgentdError, CONNECTION_CLOSED, type AgentdClient, type StreamEvent } from '../../src/client/index.ts';
import { cleanup, collect, startDaemon, waitFor, type Daemon, waitRunning, streamKilledAtFirstChunk, testClient } from '../helpers/daemon.ts';
import { chunkCount, end, text, types } from '../helpers/events.ts';
import { RawConn } from '../helpers/raw.ts';
import { decodeBody } from '../../src/shared/codec.ts';

let d: Daemon;
beforeAll(async () => {
  d = await startDaemon({
    workers: 2,
    config: {
      // Port 9 on loopback: nothing listens, so every model call fails to connect.
      providers: { nowhere: { type: 'openai', base_url: 'http://127.0.0.1:9/v1' } },
      agents: {
        assistant: { model: 'echo' },
        slow: { model: 'echo', echo: { delay_ms: 25 } },
        helper: { model: 'echo', description: 'a guest' },
        broken: { model: 'gpt-nothing', provider: 'nowhere' },
      },
    },
  });
});
afterAll(() => cleanup(d));

const client = (): Promise<AgentdClient> => testClient(d);

/**
 * 400 words on `slow`: ten seconds of output, so a turn cancelled after one
 * round trip is still running when the cancel arrives even on a loaded machine.
 */
const LONG_WORDS = 400;
const LONG = Array.from({ length: LONG_WORDS }, (_, i) => `w${i}`).join(' ');

describe('a streamed turn', () => {
  it('has the event order start, text_start, chunk…, text_end, context_usage, end', async () => {
    const c = await client();
    const evs = await collect(c.stream('assistant', 'the quick  brown fox', { sender: 'order' }));
    expect(types(evs)).toEqual(['start', 'text_start', 'chunk', 'chunk', 'chunk', 'chunk', 'text_end', 'context_usage', 'end']);
    expect(evs[0]).toEqual({ type: 'start', agent: 'assistant', run_id: expect.stringMatching(/^r/), seq: 1 });
    expect(text(evs)).toBe('the quick  brown fox');
    expect(evs.filter((e) => e.type === 'chunk').map((e) => (e as { content: string }).content)).toEqual(['the ', 'quick  ', 'brown ', 'fox']);
    expect(end(evs)).toEqual({
      type: 'end',
      agent: 'assistant',
      error: '',
      model: 'echo',
      stop_reason: 'text',
      usage: { prompt_tokens: 4, completion_tokens: 4, total_tokens: 8 },
      seq: 9,
    });
  });

  it('uses the default sender when sender is absent or empty', async () => {
    const c = await client();
    await c.send('assistant', 'to the default', { sender: '' });
    const r = await c.send('assistant', 'again');
    expect(r.usage.prompt_tokens).toBeGreaterThanOrEqual(3 + 3 + 1);
    const active = await c.request('list_active_conversations', { agent: 'assistant', sender: 'user' });
    expect((active.active_conversations as { conversations: unknown[] }).conversations).toHaveLength(1);
  });

  it('send answers once with the final text', async () => {
    const c = await client();
    expect(await c.send('assistant', 'hello there', { sender: 'send-1' })).toEqual({
      agent: 'assistant',
      content: 'hello there',
      model: 'echo',
      usage: { prompt_tokens: 2, completion_tokens: 2, total_tokens: 4 },
      run_id: expect.stringMatching(/^r/),
    });
  });

  it('a model failure is end.error on stream and 500 on send', async () => {
    const c = await client();
    const evs = await collect(c.stream('broken', 'hi'));
    expect(end(evs)).toMatchObject({ stop_reason: 'error', error: expect.stringMatching(/nowhere: cannot reach http:\/\/127\.0\.0\.1:9\/v1/) });
    await expect(c.send('broken', 'hi')).rejects.toMatchObject({ code: 500 });
  });

  it('an empty message is a turn with no action', async () => {
    const c = await client();
    const evs = await collect(c.stream('assistant', '', { sender: 'empty' }));
    expect(types(evs)).toEqual(['start', 'context_usage', 'end']);
    expect(end(evs).stop_reason).toBe('no_action');
  });

  it('/call drives the tool loop: tool_start, tool_result, tools_complete, then the output as text', async () => {
    const c = await client();
    const evs = await collect(c.stream('assistant', '/call nosuch {"q": 1}', { sender: 'tools' }));
    expect(types(evs)).toEqual(['start', 'context_usage', 'tool_start', 'tool_result', 'tools_complete', 'text_start', 'chunk', 'chunk', 'chunk', 'text_end', 'context_usage', 'end']);
    expect(evs[2]).toEqual({ type: 'tool_start', calls: [{ id: 'call_1_1', name: 'nosuch', arguments: '{"q": 1}' }], seq: 3 });
    expect(evs[3]).toMatchObject({ type: 'tool_result', call_id: 'call_1_1', is_error: true, output: 'unknown tool "nosuch"' });
    expect(text(evs)).toBe('unknown tool "nosuch"');
  });
});

describe('ordering', () => {
  it('turns sent back to back on one pair run in order, each starting after the previous end', async () => {
    // The wire order is what counts: record frames as they arrive, before any iterator sees them.
    const wire: string[] = [];
    const ids = new Map<number, number>();
    const c = await d.client({
      onRawFrame: (id, _flags, body) => {
        const ev = (decodeBody(body) as { stream?: Record<string, unknown> }).stream;
        const kind = ev && Object.keys(ev)[0];
        if (kind === 'start' || kind === 'end') wire.push(`${kind}${ids.get(id)}`);
      },
    });
    onTestFinished(() => c.close());
    const runs = [1, 2, 3, 4].map((n) => {
      const it = c.openStream('stream', { agent: 'slow', content: `turn ${n} here`, sender: 'fifo' });
      ids.set(it.id, n);
      return collect(it);
    });
    const ends = (await Promise.all(runs)).map((bodies) => (bodies.at(-1) as { stream: { end: { usage: { prompt_tokens: number } } } }).stream.end);
    expect(wire).toEqual(['start1', 'end1', 'start2', 'end2', 'start3', 'end3', 'start4', 'end4']);
    // each turn saw the history of the ones before it: 3 words per message
    expect(ends.map((e) => e.usage.prompt_tokens)).toEqual([3, 9, 15, 21]);
  });

  it('different pairs make progress in parallel: their events interleave', async () => {
    const c = await client();
    const log: string[] = [];
    const run = async (sender: string): Promise<void> => {
      for await (const ev of c.stream('slow', 'a b c d e f', { sender })) if (ev.type === 'chunk') log.push(sender);
    };
    await Promise.all([run('par-a'), run('par-b'), run('par-c')]);
    const firstEnd = Math.min(...['par-a', 'par-b', 'par-c'].map((s) => log.lastIndexOf(s)));
    // every pair produced chunks before any pair finished
    for (const s of ['par-a', 'par-b', 'par-c']) expect(log.indexOf(s)).toBeLessThan(firstEnd);
  });
});

describe('cancellation', () => {
  it('kill mid-stream ends the turn with cancelled; text streamed is kept; the next turn works', async () => {
    const c = await client();
    const k = await client();
    const evs = await streamKilledAtFirstChunk(c, k, 'slow', LONG, 'kill-me');
    const e = end(evs);
    expect(e.stop_reason).toBe('cancelled');
    expect(e.error).toBe('cancelled by kill');
    const streamed = chunkCount(evs);
    expect(streamed).toBeLessThan(LONG_WORDS);
    expect(types(evs).slice(-2)).toEqual(['text_end', 'end']);

    const next = await c.send('slow', 'next', { sender: 'kill-me' });
    expect(next.content).toBe('next');
    // history = the long user message + the streamed part + this message
    expect(next.usage.prompt_tokens).toBe(LONG_WORDS + streamed + 1);
  });

  it('kill cancels queued turns too: each sends start then end', async () => {
    const c = await client();
    const streams = [LONG, 'w2 x y z', 'w3 x y z'].map((content) => collect(c.stream('slow', content, { sender: 'killq' })));
    await waitFor(async () => {
      const r = await c.request('list_active_conversations', { agent: 'slow', sender: 'killq' });
      const conv = (r.active_conversations as { conversations: { running: boolean; queued: number }[] }).conversations[0];
      return conv !== undefined && conv.running && conv.queued === 2;
    }, 'two queued turns');
    await c.kill('slow', 'killq');
    const all = await Promise.all(streams);
    for (const evs of all) expect(end(evs).stop_reason).toBe('cancelled');
    expect(types(all[1]!)).toEqual(['start', 'end']);
    expect(types(all[2]!)).toEqual(['start', 'end']);
  });

  it('a cancelled send answers 499', async () => {
    const c = await client();
    const pending = c.send('slow', LONG, { sender: 'send-kill' });
    await waitRunning(c, 'slow', 'send-kill');
    await c.kill('slow', 'send-kill');
    await expect(pending).rejects.toMatchObject({ code: 499 });
  });

  it('a client that disconnects mid-stream cancels its turn', async () => {
    const raw = await RawConn.open(d.socketPath);
    raw.send(1, { stream: { agent: 'slow', sender: 'vanish', content: LONG } });
    await raw.until((fs) => fs.some((f) => f.body.stream?.chunk), 'a chunk');
    raw.close();
    const c = await client();
    await waitFor(async () => {
      const r = await c.request('list_active_conversations', { agent: 'slow', sender: 'vanish' });
      const conv = (r.active_conversations as { conversations: { running: boolean; message_count: number }[] }).conversations[0];
      return conv !== undefined && !conv.running && conv.message_count > 0;
    }, 'the turn to stop');
    const next = await c.send('slow', 'after', { sender: 'vanish' });
    // the user message and a part of the reply were kept, not all of it
    expect(next.usage.prompt_tokens).toBeGreaterThan(LONG_WORDS + 1);
    expect(next.usage.prompt_tokens).toBeLessThan(2 * LONG_WORDS + 1);
  });
});

describe('on_busy', () => {
  /** Starts a long turn and returns once it runs (wrapped: an async function would flatten a bare promise). */
  async function busy(c: AgentdClient, sender: string): Promise<{ first: Promise<StreamEvent[]> }> {
    const first = collect(c.stream('slow', LONG, { sender }));
    await waitRunning(c, 'slow', sender);
    return { first };
  }

  it('reject fails at once with 409 and changes nothing', async () => {
    const c = await client();
    const { first } = await busy(c, 'busy-reject');
    const it = c.stream('slow', 'no', { sender: 'busy-reject', on_busy: 'reject' });
    await expect(collect(it)).rejects.toMatchObject({ code: 409 });
    await expect(c.send('slow', 'no', { sender: 'busy-reject', on_busy: 'reject' })).rejects.toBeInstanceOf(AgentdError);
    await c.kill('slow', 'busy-reject');
    const firstEvents = await first;
    expect(end(firstEvents).stop_reason).toBe('cancelled');
    // the refused turns left no trace: the history is the first turn alone
    const next = await c.send('slow', 'x', { sender: 'busy-reject' });
    expect(next.usage.prompt_tokens).toBe(LONG_WORDS + chunkCount(firstEvents) + 1);
  });

  it('interrupt cancels the running turn and then runs', async () => {
    const c = await client();
    const { first } = await busy(c, 'busy-int');
    const second = await collect(c.stream('slow', 'now me', { sender: 'busy-int', on_busy: 'interrupt' }));
    const e1 = end(await first);
    expect(e1).toMatchObject({ stop_reason: 'cancelled', error: 'interrupted by a newer turn' });
    expect(end(second).stop_reason).toBe('text');
    expect(text(second)).toBe('now me');
  });

  it('enqueue (the default) waits its turn', async () => {
    const c = await client();
    // Both sent at once: the second cannot overtake the first, whatever the timing (the
    // wire order of starts and ends is checked by the FIFO test above), and sees its history.
    const [first, second] = await Promise.all([
      collect(c.stream('slow', 'a b c d e f g h i j', { sender: 'busy-enq' })),
      collect(c.stream('slow', 'queued one', { sender: 'busy-enq', on_busy: 'enqueue' })),
    ]);
    expect(end(first).stop_reason).toBe('text');
    expect(end(second).usage.prompt_tokens).toBe(10 + 10 + 2);
  });
});

describe('guest and ephemeral turns', () => {
  it('a guest answers inside the primary conversation', async () => {
    const c = await client();
    await c.send('assistant', 'first words', { sender: 'guest-pair' });
    const evs = await collect(c.stream('assistant', 'guest speaks', { sender: 'guest-pair', guest: 'helper' }));
    expect(evs[0]).toMatchObject({ type: 'start', agent: 'helper' });
    expect(end(evs)).toMatchObject({ agent: 'helper', stop_reason: 'text', usage: { prompt_tokens: 2 + 2 + 2 } });
    const active = await c.request('list_active_conversations', { sender: 'guest-pair' });
    const convs = (active.active_conversations as { conversations: { agent: string; message_count: number }[] }).conversations;
    expect(convs).toEqual([expect.objectContaining({ agent: 'assistant', message_count: 4 })]);
  });

  it('an unknown guest gives start then end with an error', async () => {
    const c = await client();
    const evs = await collect(c.stream('assistant', 'hi', { sender: 'guest-x', guest: 'nobody' }));
    expect(types(evs)).toEqual(['start', 'end']);
    expect(end(evs)).toMatchObject({ stop_reason: 'error', error: 'unknown guest agent "nobody"' });
  });

  it('an ephemeral turn sees only its message and stores nothing', async () => {
    const c = await client();
    await c.send('assistant', 'one two three', { sender: 'eph' });
    const evs = await collect(c.stream('assistant', 'just this', { sender: 'eph', ephemeral: true, correlation_id: 7 }));
    expect(end(evs).usage.prompt_tokens).toBe(2);
    const next = await c.send('assistant', 'four', { sender: 'eph' });
    expect(next.usage.prompt_tokens).toBe(3 + 3 + 1);
  });
});

describe('client lifecycle', () => {
  it('drain lets open requests finish, refuses new ones, then closes', async () => {
    const c = await d.client();
    const turn = collect(c.stream('slow', 'a b c', { sender: 'drain' }));
    const drained = c.drain();
    await expect(c.ping()).rejects.toMatchObject({ name: 'ConnectionClosedError', code: CONNECTION_CLOSED });
    await drained;
    expect(end(await turn).stop_reason).toBe('text');
    expect(c.isClosed).toBe(true);
    expect(await c.closed()).toBeUndefined();
  });
});

describe('load', () => {
  it('500 conversations × 3 turns over 20 connections: every reply in order, nothing lost', async () => {
    const conns = await Promise.all(Array.from({ length: 20 }, () => client()));
    const failures: string[] = [];
    await Promise.all(
      Array.from({ length: 500 }, async (_, p) => {
        const c = conns[p % 20]!;
        const sender = `load-${p}`;
        const order: number[] = [];
        const turns = [0, 1, 2].map(async (t) => {
          const content = `pair ${p} turn ${t}`;
          const evs = await collect(c.stream('assistant', content, { sender }));
          order.push(t);
          if (text(evs) !== content) failures.push(`${sender}/${t}: text ${JSON.stringify(text(evs))}`);
          const e = end(evs);
          if (e.stop_reason !== 'text') failures.push(`${sender}/${t}: ${e.stop_reason} ${e.error}`);
          if (e.usage.prompt_tokens !== 4 * (2 * t + 1)) failures.push(`${sender}/${t}: prompt ${e.usage.prompt_tokens}`);
        });
        await Promise.all(turns);
        if (order.join() !== '0,1,2') failures.push(`${sender}: order ${order.join()}`);
      }),
    );
    expect(failures).toEqual([]);
    const r = await conns[0]!.request('list_active_conversations', { agent: 'assistant' });
    const load = (r.active_conversations as { conversations: { sender: string; message_count: number }[] }).conversations.filter((x) => x.sender.startsWith('load-'));
    expect(load).toHaveLength(500);
    expect(load.every((x) => x.message_count === 6)).toBe(true);
  });
});
