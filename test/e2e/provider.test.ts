/** The OpenAI-compatible provider against a local endpoint streaming real SSE. */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentdClient, StreamEvent } from '../../src/client/index.ts';
import { cleanup, collect, makeHome, startDaemon, waitFor, type Daemon, testClient } from '../helpers/daemon.ts';
import { types, end } from '../helpers/events.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.ts';

const KEY = 'sk-test-very-secret-key';
let api: FakeOpenAI;
let d: Daemon;

// `slow` finishes only after `fast` has run: if one step's tools ran one after the other, in call order, this turn would never end.
const GATED = `
let release;
const gate = new Promise((r) => (release = r));
export const tools = [
  { name: 'slow', run: async () => { await gate; return 'slow done'; } },
  { name: 'fast', run: async () => { release(); return 'fast done'; } },
];
`;

beforeAll(async () => {
  api = await startFakeOpenAI();
  const home = makeHome();
  mkdirSync(join(home, 'harness'));
  writeFileSync(join(home, 'harness', 'gated.mjs'), GATED);
  const agent = (model: string, extra: Record<string, unknown> = {}) => ({ provider: 'fake', model, ...extra });
  d = await startDaemon({
    home,
    env: { FAKE_API_KEY: KEY },
    config: {
      providers: { fake: { type: 'openai', base_url: api.url, api_key_env: 'FAKE_API_KEY' } },
      agents: {
        assistant: agent('text', { system_prompt: 'You are terse.' }),
        thinker: agent('reasoning'),
        tooler: agent('tools', { tools: ['peers', 'skill'] }),
        broken: agent('error-mid'),
        flaky: agent('flaky'),
        down: agent('down'),
        hold: agent('hold'),
        parallel: agent('parallel', { harnesses: [{ module: 'gated', capabilities: [] }] }),
      },
    },
  });
});
afterAll(async () => {
  await cleanup(d);
  await api.close();
});

const client = (): Promise<AgentdClient> => testClient(d);
const chatRequests = () => api.requests.filter((r) => r.path === '/v1/chat/completions');

describe('OpenAI-compatible provider', () => {
  it('streams text deltas and usage; sends the key, the system prompt, and asks for usage', async () => {
    const c = await client();
    const evs = await collect(c.stream('assistant', 'hi', { sender: 'p1' }));
    expect(types(evs)).toEqual(['start', 'text_start', 'chunk', 'chunk', 'chunk', 'text_end', 'context_usage', 'end']);
    expect(evs.filter((e) => e.type === 'chunk').map((e) => (e as { content: string }).content).join('')).toBe('Hello, world');
    expect(end(evs)).toMatchObject({
      stop_reason: 'text',
      error: '',
      model: 'text',
      usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8, cache_hit_tokens: 2, cache_miss_tokens: 3 },
    });
    const req = chatRequests().at(-1)!;
    expect(req.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(req.body).toMatchObject({ model: 'text', stream: true, stream_options: { include_usage: true } });
    expect(req.body.messages).toEqual([{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'hi' }]);
  });

  it('turns reasoning deltas into thinking', async () => {
    const c = await client();
    const evs = await collect(c.stream('thinker', 'why', { sender: 'p2' }));
    expect(types(evs)).toEqual(['start', 'thinking_start', 'thinking', 'thinking', 'thinking_end', 'text_start', 'chunk', 'text_end', 'context_usage', 'end']);
  });

  it('assembles parallel tool calls sent in pieces, runs them, and sends the results back in call order', async () => {
    const c = await client();
    const evs = await collect(c.stream('tooler', 'use tools', { sender: 'p3', tool_choice: 'auto' }));
    const start = evs.find((e) => e.type === 'tool_start') as Extract<StreamEvent, { type: 'tool_start' }>;
    expect(start.calls).toEqual([
      { id: 'call_a', name: 'peers', arguments: '{}' },
      { id: 'call_b', name: 'skill', arguments: '{"name":"none"}' },
    ]);
    const results = evs.filter((e) => e.type === 'tool_result') as Extract<StreamEvent, { type: 'tool_result' }>[];
    expect(results.map((r) => r.call_id).sort()).toEqual(['call_a', 'call_b']);
    expect(results.find((r) => r.call_id === 'call_b')).toMatchObject({ is_error: true, output: expect.stringMatching(/404/) });
    expect(end(evs)).toMatchObject({ stop_reason: 'text', usage: { prompt_tokens: 30, completion_tokens: 9 } });
    const [first, second] = chatRequests().slice(-2);
    expect(first!.body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(['peers', 'skill']);
    expect(first!.body.tool_choice).toBe('auto');
    const sent = second!.body.messages as { role: string; tool_call_id?: string }[];
    expect(sent.filter((m) => m.role === 'tool').map((m) => m.tool_call_id)).toEqual(['call_a', 'call_b']);
    const history = await c.request('get_conversation_history', { agent: 'tooler', sender: 'p3' });
    expect((history.conversation_history as { messages: { role: string }[] }).messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant']);
  });

  it("one step's tool calls run concurrently: results in completion order, history in call order", async () => {
    const c = await client();
    const evs = await collect(c.stream('parallel', 'go', { sender: 'par' }));
    const results = evs.filter((e) => e.type === 'tool_result') as Extract<StreamEvent, { type: 'tool_result' }>[];
    expect(results.map((r) => [r.call_id, r.output])).toEqual([['call_fast', 'fast done'], ['call_slow', 'slow done']]);
    expect(types(evs).indexOf('tools_complete')).toBeGreaterThan(types(evs).lastIndexOf('tool_result'));
    const sent = chatRequests().at(-1)!.body.messages as { role: string; tool_call_id?: string }[];
    expect(sent.filter((m) => m.role === 'tool').map((m) => m.tool_call_id)).toEqual(['call_slow', 'call_fast']);
    const h = await c.request('get_conversation_history', { agent: 'parallel', sender: 'par' });
    expect((h.conversation_history as { messages: { role: string; content: string }[] }).messages.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual(['slow done', 'fast done']);
    expect(end(evs).stop_reason).toBe('text');
  });

  it('an error in the middle of the stream ends the turn with the endpoint message; send answers 500', async () => {
    const c = await client();
    const evs = await collect(c.stream('broken', 'go', { sender: 'p4' }));
    expect(end(evs)).toMatchObject({ stop_reason: 'error', error: 'fake: upstream exploded' });
    await expect(c.send('broken', 'go', { sender: 'p4b' })).rejects.toMatchObject({ code: 500, message: 'fake: upstream exploded' });
  });

  it('retries a 429 before any output, and gives up on 5xx after a bounded number of tries', async () => {
    const c = await client();
    const before = chatRequests().filter((r) => r.body.model === 'flaky').length;
    const r = await c.send('flaky', 'again', { sender: 'p5' });
    expect(r.content).toBe('Hello, world');
    expect(chatRequests().filter((q) => q.body.model === 'flaky').length - before).toBe(2);
    await expect(c.send('down', 'hello', { sender: 'p6' })).rejects.toMatchObject({ code: 500, message: 'fake: HTTP 500 Internal Server Error: the model is down for maintenance' });
    expect(chatRequests().filter((q) => q.body.model === 'down')).toHaveLength(4);
  });

  it('kill aborts the HTTP request', async () => {
    const c = await client();
    const evs: StreamEvent[] = [];
    for await (const ev of c.stream('hold', 'wait', { sender: 'p7' })) {
      evs.push(ev);
      if (ev.type === 'chunk') await c.kill('hold', 'p7');
    }
    expect(end(evs)).toMatchObject({ stop_reason: 'cancelled' });
    await waitFor(() => api.aborted === 1, 'the endpoint to see the abort');
  });

  it('list_models asks the endpoint; set_active_model repoints the default agent or answers 404', async () => {
    const c = await client();
    const { model_list } = (await c.request('list_models')) as { model_list: { models: { name: string; active: boolean }[] } };
    expect(model_list.models.find((m) => m.name === 'reasoning')).toEqual({ name: 'reasoning', active: false });
    expect(model_list.models.filter((m) => m.active)).toEqual([{ name: 'text', active: true }]);
    await expect(c.request('set_active_model', { model: 'gpt-nonexistent' })).rejects.toMatchObject({ code: 404 });
    await c.request('set_active_model', { model: 'reasoning' });
    expect(((await c.request('get_agent', { name: 'assistant' })).agent_info as { model: string }).model).toBe('reasoning');
    const evs = await collect(c.stream('assistant', 'now', { sender: 'p8' }));
    expect(types(evs)).toContain('thinking');
    await c.request('set_active_model', { model: 'text' });
  });

  it('never writes the API key to a log, a reply or the database', async () => {
    const c = await client();
    const bytes: Buffer[] = [];
    const raw = await d.client({ onRawFrame: (_id, _f, body) => bytes.push(Buffer.from(body)) });
    onTestFinished(() => raw.close());
    await raw.request('list_agents');
    await raw.request('get_agent', { name: 'assistant' });
    await c.stats();
    expect(Buffer.concat(bytes).includes(KEY)).toBe(false);
    expect(d.stderr()).not.toContain(KEY);
    expect(readFileSync(join(d.home, 'agentd.db')).includes(KEY)).toBe(false);
    expect(readFileSync(join(d.home, 'agentd.db-wal')).includes(KEY)).toBe(false);
  });
});
