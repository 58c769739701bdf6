/**
 * A provider's `timeout_ms` counts silence, not the whole answer: the wait
 * for the connection and first byte, then each wait for the next chunk. On
 * a provider whose stream the test writes, under fake timers, so no result
 * depends on how busy the machine is.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AgentConfig } from '../../src/shared/config.ts';
import { Cancellation } from '../../src/shard/turn/cancellation.ts';
import { OpenAIModel } from '../../src/models/openai.ts';
import type { ModelEvent, ModelRequest } from '../../src/models/types.ts';

const TIMEOUT_MS = 300;
const TIMED_OUT = `provider "quick" sent nothing for ${TIMEOUT_MS} ms (timeout_ms)`;

/** Stubs fetch with an endpoint that answers 200 at once and streams only what `send` writes; fetch's abort errors the stream. */
function scriptedProvider(): { send(content: string): void } {
  const enc = new TextEncoder();
  let stream: ReadableStreamDefaultController<Uint8Array> | undefined;
  vi.stubGlobal('fetch', async (_url: string, init: RequestInit) => {
    const body = new ReadableStream<Uint8Array>({ start: (c) => void (stream = c) });
    init.signal?.addEventListener('abort', () => stream?.error(init.signal?.reason));
    return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
  });
  return {
    send: (content) => stream?.enqueue(enc.encode(`data: ${JSON.stringify({ choices: [{ delta: { content } }] })}\n\n`)),
  };
}

function startTurn(): AsyncIterator<ModelEvent> {
  const model = new OpenAIModel('quick', { type: 'openai', base_url: 'http://provider.invalid/v1', api_key_env: null, headers: {}, timeout_ms: TIMEOUT_MS });
  const request: ModelRequest = {
    history: [],
    messages: [{ role: 'user', content: 'hi' }],
    tools: [],
    toolChoice: null,
    agent: { model: 'hold', system_prompt: '' } as AgentConfig,
    cancel: new Cancellation(),
  };
  return model.stream(request)[Symbol.asyncIterator]();
}

/** The next event, or the error that ended the stream, without an unhandled rejection meanwhile. */
const settle = (next: Promise<IteratorResult<ModelEvent>>): Promise<IteratorResult<ModelEvent> | string> => next.catch((err: Error) => err.message);

describe("a provider's timeout_ms", () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => {
    vi.useRealTimers();
    vi.unstubAllGlobals();
  });

  it('ends the stream with a clear error when the provider falls silent after a chunk', async () => {
    const provider = scriptedProvider();
    const turn = startTurn();
    const first = settle(turn.next());
    await vi.advanceTimersByTimeAsync(TIMEOUT_MS - 1);
    provider.send('waiting');
    expect(await first).toEqual({ done: false, value: { type: 'text', delta: 'waiting' } });

    // Longer than timeout_ms since the request, but never that long silent.
    const second = settle(turn.next());
    await vi.advanceTimersByTimeAsync(TIMEOUT_MS - 1);
    provider.send(' still');
    expect(await second).toEqual({ done: false, value: { type: 'text', delta: ' still' } });

    const third = settle(turn.next());
    await vi.advanceTimersByTimeAsync(TIMEOUT_MS - 1);
    let settled = false;
    void third.then(() => (settled = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await third).toBe(TIMED_OUT);
  });

  it('ends the stream the same way when nothing at all comes', async () => {
    scriptedProvider();
    const first = settle(startTurn().next());
    await vi.advanceTimersByTimeAsync(TIMEOUT_MS);
    expect(await first).toBe(TIMED_OUT);
  });
});
