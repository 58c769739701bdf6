/**
 * Issue 10, item 3: an agent's memory is scoped to the counterparty. In a turn
 * for mallory, `search_sessions` (and a harness's `sessions.search`) must not
 * return alice's conversation with the same agent, whatever the tool's
 * arguments say; `session_search: "agent"` opts into sharing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentdClient, StreamEvent } from '../../src/client/index.ts';
import { cleanup, collect, makeHome, startDaemon, testClient, waitFor, type Daemon } from '../helpers/daemon.ts';

const PIN = 'zebra4471';

// A harness tool that passes whatever sender its caller names: the host must ignore it.
const RECALL = `
export const tools = [{
  name: 'recall',
  parameters: { type: 'object', properties: { topic: { type: 'string' }, sender: { type: 'string' } } },
  run: async ({ topic, sender }, ctx) => JSON.stringify(await ctx.capabilities.sessions.search(topic, { sender })),
}];
`;

let d: Daemon;

beforeAll(async () => {
  const home = makeHome({
    agents: {
      assistant: { model: 'echo', harnesses: [{ module: 'recall', capabilities: ['sessions.search'] }] },
    },
  });
  mkdirSync(join(home, 'harness'));
  writeFileSync(join(home, 'harness', 'recall.mjs'), RECALL);
  d = await startDaemon({ home });
  const c = await d.client();
  await c.send('assistant', `my bank pin is ${PIN}`, { sender: 'alice' });
  await c.close();
});
afterAll(() => cleanup(d));

type Hit = { agent: string; sender: string; window: { snippet: string }[] };

/** Runs one echo tool call for `sender`; returns the tool's output parsed as hits. */
async function toolHits(c: AgentdClient, sender: string, tool: string, args: Record<string, unknown>): Promise<Hit[]> {
  const evs = await collect(c.stream('assistant', `/call ${tool} ${JSON.stringify(args)}`, { sender }));
  const result = evs.find((e) => e.type === 'tool_result') as Extract<StreamEvent, { type: 'tool_result' }> | undefined;
  expect(result, 'the tool ran').toBeDefined();
  expect(result!.is_error, result!.output).toBe(false);
  return JSON.parse(result!.output) as Hit[];
}

async function historyText(c: AgentdClient, sender: string): Promise<string> {
  const h = await c.request('get_conversation_history', { agent: 'assistant', sender });
  return JSON.stringify(h.conversation_history);
}

describe('session search is scoped to the calling conversation sender', () => {
  it("alice finds her own conversation (the search works)", async () => {
    const c = await testClient(d);
    const hits = await toolHits(c, 'alice', 'search_sessions', { query: PIN });
    expect(hits.map((h) => h.sender)).toEqual(['alice']);
  });

  it("mallory's search_sessions returns none of alice's conversation, and mallory's history never holds the pin", async () => {
    const c = await testClient(d);
    const byWords = await toolHits(c, 'mallory', 'search_sessions', { query: 'bank pin' });
    expect(byWords.filter((h) => h.sender !== 'mallory')).toEqual([]);
    expect(await historyText(c, 'mallory')).not.toContain(PIN);
    const byPin = await toolHits(c, 'mallory', 'search_sessions', { query: PIN });
    expect(byPin.filter((h) => h.sender !== 'mallory')).toEqual([]);
    expect(JSON.stringify(byPin)).not.toContain('bank pin');
  });

  it("a harness's sessions.search is held to the caller's sender, whatever sender the tool asks for", async () => {
    const c = await testClient(d);
    const hits = await toolHits(c, 'mallory2', 'recall', { topic: PIN, sender: 'alice' });
    expect(hits.filter((h) => h.sender !== 'mallory2')).toEqual([]);
    expect(await historyText(c, 'mallory2')).not.toMatch(/bank pin/);
  });

  it('a turn fired by the event bus searches only its own event conversation', async () => {
    const c = await testClient(d);
    await c.subscribe('probe', 'assistant', true);
    expect(await c.publish('probe', `/call search_sessions ${JSON.stringify({ query: PIN })}`)).toBe(1);
    let text = '';
    await waitFor(async () => {
      // A turn's messages are committed together: once the pair exists, its turn is whole.
      text = await historyText(c, 'event:probe').catch(() => '');
      return text !== '';
    }, 'the fired turn to be stored');
    expect(text).toContain('"role":"tool"');
    expect(text).not.toContain('"sender":"alice"');
    expect(text).not.toContain('bank pin');
  });

  it('over the socket, search_sessions still searches every conversation (the operator)', async () => {
    const c = await testClient(d);
    const r = await c.request('search_sessions', { query: PIN });
    expect((r.session_hits as { hits: Hit[] }).hits.map((h) => h.sender)).toContain('alice');
  });

  it('with session_search "agent", the agent shares memory across its senders', async () => {
    const c = await testClient(d);
    await c.request('update_agent', { name: 'assistant', config: { session_search: 'agent' } });
    try {
      const hits = await toolHits(c, 'mallory3', 'search_sessions', { query: PIN });
      const alice = hits.find((h) => h.sender === 'alice');
      expect(alice?.window.map((m) => m.snippet).join(' ')).toContain(PIN);
      const viaHarness = await toolHits(c, 'mallory3', 'recall', { topic: PIN, sender: 'alice' });
      expect(viaHarness.map((h) => h.sender)).toEqual(['alice']);
    } finally {
      await c.request('update_agent', { name: 'assistant', config: { session_search: 'sender' } });
    }
  });
});
