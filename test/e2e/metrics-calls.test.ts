/** Metrics of what turns call: providers (and their errors), MCP and harness tools, commits, evictions, the bus, bytes, searches. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, collect, startDaemon, testClient, type Daemon } from '../helpers/daemon.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.ts';
import { callTool, stdioEntry } from '../helpers/mcp.ts';
import { end } from '../helpers/events.ts';

let api: FakeOpenAI;
let d: Daemon;
/** The MCP fixture's notes (fixtureDir() belongs to one test; this daemon serves them all). */
const notesDir = mkdtempSync(join(tmpdir(), 'agentd-mcp-'));
beforeAll(async () => {
  api = await startFakeOpenAI(['text', 'down']);
  d = await startDaemon({
    workers: 1,
    args: ['--metrics', '127.0.0.1:0'],
    env: { FAKE_KEY: 'sk-x' },
    config: {
      memory_conversations: 2,
      providers: { fake: { type: 'openai', base_url: api.url, api_key_env: 'FAKE_KEY' } },
      agents: {
        assistant: { model: 'echo' },
        compacting: { model: 'echo', compact_threshold: 1 },
        tooled: { model: 'echo', mcps: { fx: stdioEntry(notesDir) } },
        remote: { model: 'text', provider: 'fake' },
        down: { model: 'down', provider: 'fake' },
      },
    },
  });
}, 60_000);
afterAll(async () => {
  await cleanup(d);
  await api.close();
  rmSync(notesDir, { recursive: true, force: true });
});

async function scrape(): Promise<string> {
  const port = readFileSync(join(d.home, 'run', 'metrics.port'), 'utf8').trim();
  return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
}

/** The value of one sample line, or undefined when it is absent. */
function sample(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('metrics of calls', { timeout: 60_000 }, () => {
  it('counts provider calls by status with their latency and tokens, a provider error among them', async () => {
    const c = await testClient(d);
    expect(end(await collect(c.stream('remote', 'hello', { sender: 'p1' })))).toMatchObject({ stop_reason: 'text', error: '' });
    expect(end(await collect(c.stream('down', 'hello', { sender: 'p2' })))).toMatchObject({ stop_reason: 'error', error: expect.stringContaining('HTTP 500') });
    for (let i = 0; i < 2; i++) await collect(c.stream('assistant', 'hi', { sender: `e${i}` }));
    const text = await scrape();
    expect(sample(text, 'agentd_provider_calls_total', '{provider="fake",model="text",status="ok"}')).toBe(1);
    expect(sample(text, 'agentd_provider_calls_total', '{provider="fake",model="down",status="error"}')).toBe(1);
    expect(sample(text, 'agentd_provider_calls_total', '{provider="echo",model="echo",status="ok"}')).toBe(2);
    expect(sample(text, 'agentd_provider_call_duration_seconds_count', '{provider="fake"}')).toBe(2);
    expect(sample(text, 'agentd_provider_tokens_total', '{provider="fake",direction="input"}')).toBeGreaterThan(0);
    expect(sample(text, 'agentd_turns_total', '{agent="down",outcome="error"}')).toBe(1);
    c.close();
  });

  it('counts compactions by trigger: before a turn past compact_threshold, and asked for', async () => {
    const c = await testClient(d);
    for (const content of ['first words', 'second words']) await collect(c.stream('compacting', content, { sender: 'k1' }));
    await collect(c.stream('assistant', 'to compact', { sender: 'k2' }));
    expect(await c.compact('assistant', { sender: 'k2' })).toContain('the user said: to compact');
    const text = await scrape();
    expect(sample(text, 'agentd_compactions_total', '{trigger="auto",status="ok"}')).toBe(1);
    expect(sample(text, 'agentd_compactions_total', '{trigger="request",status="ok"}')).toBe(1);
    c.close();
  });

  it('counts MCP calls by server and status, and tool calls by tool', async () => {
    const c = await testClient(d);
    expect((await callTool(c, 'tooled', 'fx__echo', { text: 'x' }, 'm1')).result.is_error).toBe(false);
    expect((await callTool(c, 'tooled', 'fx__fail', { message: 'no' }, 'm2')).result.is_error).toBe(true);
    expect((await callTool(c, 'tooled', 'peers', {}, 'm3')).result.is_error).toBe(false);
    const text = await scrape();
    expect(sample(text, 'agentd_mcp_calls_total', '{server="fx",status="ok"}')).toBe(1);
    expect(sample(text, 'agentd_mcp_calls_total', '{server="fx",status="error"}')).toBe(1);
    expect(sample(text, 'agentd_tool_calls_total', '{tool="fx__echo",status="ok"}')).toBe(1);
    expect(sample(text, 'agentd_tool_calls_total', '{tool="peers",status="ok"}')).toBe(1);
    expect(sample(text, 'agentd_tool_call_duration_seconds_count', '{kind="mcp"}')).toBe(2);
    expect(sample(text, 'agentd_tool_call_duration_seconds_count', '{kind="harness"}')).toBe(1);
    c.close();
  });

  it('counts commits, their batch sizes, evictions, the bus, searches and bytes', async () => {
    const c = await testClient(d);
    const before = await scrape();
    await c.subscribe('kick', 'assistant');
    expect(await c.publish('kick', 'go')).toBe(1);
    expect(await c.publish('nothing.listens', 'go')).toBe(0);
    await collect(c.stream('assistant', 'after the kick', { sender: 'b1' }));
    await c.request('search_sessions', { query: 'hello' });
    const text = await scrape();
    const grew = (name: string, labels = ''): number => sample(text, name, labels)! - (sample(before, name, labels) ?? 0);
    expect(grew('agentd_bus_publishes_total')).toBe(2);
    expect(grew('agentd_bus_fired_turns_total')).toBe(1);
    // Each turn here was committed, some of them together in one group commit.
    const commits = sample(text, 'agentd_storage_commit_duration_seconds_count')!;
    expect(commits).toBeGreaterThan(0);
    expect(sample(text, 'agentd_storage_commit_batch_turns_count')).toBe(commits);
    expect(sample(text, 'agentd_storage_commit_batch_turns_sum')).toBeGreaterThanOrEqual(commits);
    // Two conversations fit in memory; every turn here used a new one.
    expect(sample(text, 'agentd_conversations_evicted_total')).toBeGreaterThan(0);
    expect(sample(text, 'agentd_conversations_in_memory')).toBeLessThanOrEqual(3);
    expect(sample(text, 'agentd_search_duration_seconds_count')).toBe(1);
    expect(grew('agentd_received_bytes_total', '{listener="unix"}')).toBeGreaterThan(0);
    expect(grew('agentd_sent_bytes_total', '{listener="unix"}')).toBeGreaterThan(0);
    expect(sample(text, 'agentd_shard_crashes_total')).toBe(0);
    c.close();
  });
});
