/** PROTOCOL §4.13 steer over real sockets: a message added to a running turn at its next boundary, stored in the order the model saw it. */
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentdClient, StreamEvent } from '../../src/client/index.ts';
import { cleanup, collect, makeHome, startDaemon, testClient, waitFor, type Daemon } from '../helpers/daemon.ts';
import { text, types, watchEvents, until } from '../helpers/events.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.ts';

const GATE = resolve(import.meta.dirname, '../fixtures/gate-harness.mjs');

let d: Daemon;
// `held` answers its first step only when the test releases it: a barrier that keeps the turn in its model call while the test steers.
let api: FakeOpenAI;
beforeAll(async () => {
  api = await startFakeOpenAI(['held']);
  const home = makeHome({
    providers: { fake: { type: 'openai', base_url: api.url, api_key_env: 'FAKE_API_KEY' } },
    agents: {
      gated: { model: 'echo', harnesses: [{ module: 'gate', capabilities: [] }] },
      slow: { model: 'echo', echo: { delay_ms: 20 } },
      answering: { provider: 'fake', model: 'held' },
      once: { provider: 'fake', model: 'held', max_iterations: 1 },
    },
  });
  mkdirSync(join(home, 'harness'), { mode: 0o700 });
  copyFileSync(GATE, join(home, 'harness', 'gate.mjs'));
  // A key no answer here begins with: the redactor holds back text that could start a secret, splitting chunks.
  d = await startDaemon({ home, env: { FAKE_API_KEY: 'Q9-steer-test-key' } });
});
afterAll(async () => {
  await cleanup(d);
  await api.close();
});

const client = (): Promise<AgentdClient> => testClient(d);

async function history(c: AgentdClient, agent: string, sender: string): Promise<string[]> {
  const r = await c.history(agent, sender);
  return r.messages.map((m) => `${m.role}: ${m.content}`);
}

async function rest(it: AsyncIterator<StreamEvent>): Promise<StreamEvent[]> {
  const seen: StreamEvent[] = [];
  for (let r = await it.next(); !r.done; r = await it.next()) seen.push(r.value);
  return seen;
}

describe('steer', () => {
  it('during a tool call: taken after the tool finishes, before the next model call, seen by the model and stored in that order', async () => {
    const c = await client();
    const observer = await client();
    const events = await watchEvents(observer, 'gated');
    const gate = join(d.home, 'gate-1');
    const call = `/call gate {"path": ${JSON.stringify(gate)}}`;
    const it = c.stream('gated', call, { sender: 'steer-tool' })[Symbol.asyncIterator]();
    const before = await until(it, 'tool_start');
    const runId = (before[0] as { run_id: string }).run_id;

    expect(await (await client()).steer('gated', 'also check the logs', 'steer-tool')).toBe(runId);
    writeFileSync(gate, '');
    const after = await rest(it);
    expect(types(after)).toEqual(['tool_result', 'tools_complete', 'steered', 'text_start', 'chunk', 'chunk', 'chunk', 'chunk', 'text_end', 'context_usage', 'end']);
    expect(after[2]).toMatchObject({ type: 'steered', content: 'also check the logs' });
    expect(text(after)).toBe('also check the logs');
    expect(after.at(-1)).toMatchObject({ stop_reason: 'text' });
    expect(await history(c, 'gated', 'steer-tool')).toEqual([
      `user: ${call}`,
      'assistant: ',
      'tool: opened gate-1',
      'user: also check the logs',
      'assistant: also check the logs',
    ]);
    await waitFor(() => events.some((e) => e.type === 'done'), 'the turn\'s done agent event');
    expect(events.filter((e) => e.type === 'steered')).toEqual([expect.objectContaining({ type: 'steered', content: 'also check the logs', run_id: runId, sender: 'steer-tool' })]);
  });

  it('while the model answers: the turn takes one more step to answer it', async () => {
    const c = await client();
    const it = c.stream('answering', 'one two three', { sender: 'steer-text' })[Symbol.asyncIterator]();
    await until(it, 'chunk');
    await (await client()).steer('answering', 'and four', 'steer-text');
    api.release();
    const evs = await rest(it);
    expect(types(evs).filter((t) => t !== 'chunk')).toEqual(['text_end', 'context_usage', 'steered', 'text_start', 'text_end', 'context_usage', 'end']);
    expect(await history(c, 'answering', 'steer-text')).toEqual(['user: one two three', 'assistant: held then released', 'user: and four', 'assistant: and four']);
  });

  it('after the last allowed step: stored after the answer, never dropped', async () => {
    const c = await client();
    const it = c.stream('once', 'only step', { sender: 'steer-last' })[Symbol.asyncIterator]();
    await until(it, 'chunk');
    await (await client()).steer('once', 'too late to answer', 'steer-last');
    api.release();
    const evs = await rest(it);
    expect(types(evs).slice(-2)).toEqual(['steered', 'end']);
    expect(await history(c, 'once', 'steer-last')).toEqual(['user: only step', 'assistant: held then released', 'user: too late to answer']);
  });

  it('409 when nothing runs; 404 for an unknown agent; 400 without content', async () => {
    const c = await client();
    await collect(c.stream('slow', 'done already', { sender: 'steer-idle' }));
    await expect(c.steer('slow', 'anyone?', 'steer-idle')).rejects.toMatchObject({ code: 409, message: 'no turn is running for agent "slow" and sender "steer-idle" to steer' });
    await expect(c.steer('slow', 'anyone?', 'never-seen')).rejects.toMatchObject({ code: 409 });
    await expect(c.steer('nobody', 'x')).rejects.toMatchObject({ code: 404 });
    await expect(c.request('steer', { agent: 'slow' })).rejects.toMatchObject({ code: 400, message: 'steer.content is required' });
  });
});
