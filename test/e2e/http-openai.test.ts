/**
 * The OpenAI-compatible routes, driven by the official `openai` package
 * against a real daemon: chat completions (streaming and not), responses
 * (streaming and not), and the agents as models.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, startDaemon } from '../helpers/daemon.ts';
import { httpParts, type HttpDaemon } from '../helpers/http-daemon.ts';

let h: HttpDaemon;
let openai: OpenAI;

beforeAll(async () => {
  const daemon = await startDaemon({ config: { agents: { assistant: { model: 'echo' }, other: { model: 'echo' } } }, args: ['--http', '127.0.0.1:0'] });
  h = httpParts(daemon);
  openai = new OpenAI({ baseURL: `${h.base}/v1`, apiKey: h.token, maxRetries: 0 });
});
afterAll(() => cleanup(h.daemon));

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
    const chunks = [];
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

  it('needs the token', async () => {
    const stranger = new OpenAI({ baseURL: `${h.base}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await expect(stranger.chat.completions.create({ model: 'assistant', messages: [{ role: 'user', content: 'hi' }] })).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });
});

describe('models', () => {
  it('lists the agents as models, and retrieves one', async () => {
    const ids = [];
    for await (const m of openai.models.list()) ids.push(m.id);
    expect(ids.sort()).toEqual(['assistant', 'other']);
    expect(await openai.models.retrieve('other')).toMatchObject({ id: 'other', object: 'model', owned_by: 'agentd' });
    await expect(openai.models.retrieve('nobody')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });
});
