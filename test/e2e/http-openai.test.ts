/**
 * The OpenAI-compatible routes, driven by the official `openai` package
 * against a real daemon: chat completions (streaming and not), responses
 * (streaming and not), and the agents as models.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, startDaemon, waitFor } from '../helpers/daemon.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.ts';
import { httpParts, type HttpDaemon } from '../helpers/http-daemon.ts';

let h: HttpDaemon;
let openai: OpenAI;
let api: FakeOpenAI;

beforeAll(async () => {
  api = await startFakeOpenAI(['unauthorized']);
  const daemon = await startDaemon({
    config: {
      providers: { fake: { type: 'openai', base_url: api.url, api_key_env: 'FAKE_API_KEY' } },
      agents: { assistant: { model: 'echo' }, other: { model: 'echo' }, slow: { model: 'echo', echo: { delay_ms: 200 } }, locked: { provider: 'fake', model: 'unauthorized' } },
    },
    env: { FAKE_API_KEY: 'k' },
    args: ['--http', '127.0.0.1:0'],
  });
  h = httpParts(daemon);
  openai = new OpenAI({ baseURL: `${h.base}/v1`, apiKey: h.token, maxRetries: 0 });
});
afterAll(async () => {
  await cleanup(h.daemon);
  await api.close();
});

async function history(sender: string): Promise<{ role: string; content: string }[]> {
  const c = await h.daemon.client();
  try {
    const r = await c.request('get_conversation_history', { agent: 'assistant', sender }).catch((e: { code?: number }) => {
      if (e.code === 404) return { conversation_history: { messages: [] } }; // no conversation: nothing stored
      throw e;
    });
    return (r.conversation_history as { messages: { role: string; content: string }[] }).messages.map((m) => ({ role: m.role, content: m.content }));
  } finally {
    await c.close();
  }
}

describe('chat completions', () => {
  it('answers a completion with the turn\'s text and usage, on the pair (model, user); only the newest user message is sent', async () => {
    const r = await openai.chat.completions.create({
      model: 'assistant',
      user: 'alice',
      messages: [{ role: 'system', content: 'ignored' }, { role: 'user', content: 'old' }, { role: 'assistant', content: 'x' }, { role: 'user', content: 'hello there' }],
    });
    expect(r.object).toBe('chat.completion');
    expect(r.model).toBe('assistant');
    expect(r.id).toMatch(/^chatcmpl-r[0-9a-f]{8}-/);
    expect(r.choices[0]!.message).toMatchObject({ role: 'assistant', content: 'hello there' });
    expect(r.choices[0]!.finish_reason).toBe('stop');
    expect(r.usage!.total_tokens).toBeGreaterThan(0);
    expect(r.usage!.total_tokens).toBe(r.usage!.prompt_tokens + r.usage!.completion_tokens);
    expect(await history('alice')).toEqual([{ role: 'user', content: 'hello there' }, { role: 'assistant', content: 'hello there' }]);
  });

  it('streams chat.completion.chunk deltas that add up to the reply, with usage when asked, ending with [DONE]', async () => {
    const stream = await openai.chat.completions.create({
      model: 'assistant', user: 'bob', stream: true, stream_options: { include_usage: true },
      messages: [{ role: 'user', content: [{ type: 'text', text: 'streamed words here' }] }],
    });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0]!.id)).toBe(true);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('streamed words here');
    expect(chunks.filter((c) => c.choices[0]?.delta.content).length).toBeGreaterThan(1);
    expect(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0]!.finish_reason).toBe('stop');
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage!.total_tokens).toBeGreaterThan(0);
    expect(await history('bob')).toHaveLength(2);
  });

  it('without user, the turn goes to the default sender', async () => {
    await openai.chat.completions.create({ model: 'assistant', messages: [{ role: 'user', content: 'to the default' }] });
    expect(await history('user')).toContainEqual({ role: 'user', content: 'to the default' });
  });

  it('an unknown model is a 404 in OpenAI\'s error shape, streaming or not', async () => {
    const err = await openai.chat.completions.create({ model: 'nobody', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as InstanceType<typeof OpenAI.NotFoundError>).error).toMatchObject({ code: 'model_not_found', type: 'invalid_request_error', message: expect.stringContaining('nobody') });
    const streamed = await openai.chat.completions.create({ model: 'nobody', stream: true, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(streamed).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('bad input is a 400 naming the field, and nothing is stored', async () => {
    const noUser = await openai.chat.completions.create({ model: 'assistant', user: 'carol', messages: [{ role: 'system', content: 'only system' }] }).catch((e: unknown) => e);
    expect(noUser).toBeInstanceOf(OpenAI.BadRequestError);
    expect((noUser as Error).message).toContain('no user message');
    const raw = await fetch(`${h.base}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${h.token}` }, body: JSON.stringify({ messages: [] }) });
    expect(raw.status).toBe(400);
    expect(await raw.json()).toMatchObject({ error: { type: 'invalid_request_error', message: expect.stringContaining('model') } });
    expect(await history('carol')).toEqual([]);
  });

  it('a client that goes away mid-stream cancels its turn', async () => {
    const abort = new AbortController();
    const stream = await openai.chat.completions.create({ model: 'slow', user: 'gone', stream: true, messages: [{ role: 'user', content: 'one two three four five six seven eight nine ten' }] }, { signal: abort.signal });
    let runId = '';
    let text = '';
    // The openai client ends the iteration quietly once aborted.
    for await (const c of stream) {
      runId = c.id.slice('chatcmpl-'.length);
      text += c.choices[0]?.delta.content ?? '';
      if (text !== '') abort.abort();
    }
    expect(text).toBe('one ');
    const c = await h.daemon.client();
    try {
      await waitFor(async () => ((await c.request('get_run', { run_id: runId })).run as { status: string }).status === 'cancelled', 'the run cancelled');
      expect((await c.request('get_run', { run_id: runId })).run).toMatchObject({ agent: 'slow', sender: 'gone', stop_reason: 'cancelled', error: 'connection closed' });
    } finally {
      await c.close();
    }
  });

  it('a turn that fails is a 500 with the turn\'s error; streamed, an error event after the stream began', async () => {
    const err = await openai.chat.completions.create({ model: 'locked', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect((err as Error).message).toMatch(/401|unauthori/i);
    const stream = await openai.chat.completions.create({ model: 'locked', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const failed = await (async () => {
      for await (const _ of stream) { /* the role chunk, then the error */ }
    })().catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(OpenAI.APIError);
    expect((failed as Error).message).toMatch(/401|unauthori/i);
    const events: string[] = [];
    for await (const e of await openai.responses.create({ model: 'locked', input: 'hi', stream: true })) events.push(e.type);
    expect(events.at(-1)).toBe('response.failed');
  });

  it('the routes are in the OpenAPI document', async () => {
    const doc = (await (await fetch(`${h.base}/v1/openapi.json`)).json()) as { paths: Record<string, unknown> };
    for (const path of ['/v1/chat/completions', '/v1/responses', '/v1/models', '/mcp', '/a2a/{agent}', '/v1/events/{source}']) expect(doc.paths).toHaveProperty([path]);
  });

  it('needs the token', async () => {
    const stranger = new OpenAI({ baseURL: `${h.base}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await expect(stranger.chat.completions.create({ model: 'assistant', messages: [{ role: 'user', content: 'hi' }] })).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });
});

describe('models', () => {
  it('lists the agents as models, and retrieves one', async () => {
    const ids: string[] = [];
    for await (const m of openai.models.list()) ids.push(m.id);
    expect(ids.sort()).toEqual(['assistant', 'locked', 'other', 'slow']);
    expect(await openai.models.retrieve('other')).toMatchObject({ id: 'other', object: 'model', owned_by: 'agentd' });
    await expect(openai.models.retrieve('nobody')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });
});

describe('responses', () => {
  it('answers a response object with the turn\'s text and usage', async () => {
    const r = await openai.responses.create({ model: 'assistant', user: 'dora', input: 'a plain response' });
    expect(r).toMatchObject({ object: 'response', status: 'completed', model: 'assistant', error: null });
    expect(r.id).toMatch(/^resp_r[0-9a-f]{8}-/);
    expect(r.output_text).toBe('a plain response');
    expect(r.usage!.total_tokens).toBe(r.usage!.input_tokens + r.usage!.output_tokens);
    expect(r.usage!.total_tokens).toBeGreaterThan(0);
    expect(await history('dora')).toEqual([{ role: 'user', content: 'a plain response' }, { role: 'assistant', content: 'a plain response' }]);
  });

  it('takes the newest user message of an input array', async () => {
    const r = await openai.responses.create({
      model: 'assistant', user: 'erin',
      input: [{ role: 'user', content: 'first' }, { role: 'assistant', content: 'x' }, { role: 'user', content: [{ type: 'input_text', text: 'second' }] }],
    });
    expect(r.output_text).toBe('second');
  });

  it('streams the Responses API\'s events in order, the deltas adding up to the text', async () => {
    const stream = await openai.responses.create({ model: 'assistant', user: 'fred', input: 'streamed response words', stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const e of stream) events.push(e);
    const types = events.map((e) => e.type);
    expect(types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    expect(types.slice(-4)).toEqual(['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const deltas = events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : []));
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('streamed response words');
    const done = events.at(-1)!;
    if (done.type !== 'response.completed') throw new Error('no response.completed');
    expect(done.response.output_text ?? done.response.output).toBeTruthy();
    expect(done.response.usage!.total_tokens).toBeGreaterThan(0);
    expect(done.response.id).toBe((events[0] as { response: { id: string } }).response.id);
  });

  it('an unknown model is a 404 model_not_found; an input without a user message is a 400', async () => {
    const err = await openai.responses.create({ model: 'nobody', input: 'hi', stream: true }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
    await expect(openai.responses.create({ model: 'assistant', input: [{ role: 'assistant', content: 'x' }] })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
  });
});
