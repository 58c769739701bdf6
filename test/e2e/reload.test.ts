/**
 * Changes without a restart: `reload_config` and SIGHUP read agentd.json
 * again, apply agents, providers, live limits and the log level, name what
 * needs a restart, and refuse a bad file without changing anything.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanup, startDaemon, waitFor, type Daemon } from '../helpers/daemon.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.ts';
import type { AgentdClient } from '../../src/client/index.ts';

const BASE = { max_agents: 10, max_queued_turns: 1000, log_level: 'warn', agents: { assistant: { model: 'echo' } } };

let d: Daemon;
let api: FakeOpenAI;
let c: AgentdClient;

const writeConfig = (config: unknown): void => writeFileSync(join(d.home, 'agentd.json'), typeof config === 'string' ? config : JSON.stringify(config));
const limits = async (): Promise<Record<string, number>> => (await c.stats()).limits;

beforeAll(async () => {
  api = await startFakeOpenAI();
  d = await startDaemon({ workers: 2, config: BASE, env: { FAKE_API_KEY: 'k-reload' } });
  c = await d.client();
});
afterAll(async () => {
  await c.close();
  await cleanup(d);
  await api.close();
});

describe('reload_config', () => {
  it('applies limits, providers, new agents and the log level; names what needs a restart', async () => {
    writeConfig({
      ...BASE,
      max_agents: 12,
      max_queued_turns: 5,
      log_level: 'info',
      providers: { fake: { type: 'openai', base_url: api.url, api_key_env: 'FAKE_API_KEY' } },
      agents: { ...BASE.agents, talker: { provider: 'fake', model: 'text' } },
    });
    const r = await c.reloadConfig();
    expect([...r.applied].sort()).toEqual(['agents.talker', 'log_level', 'max_agents', 'providers']);
    expect(r.restart_required).toEqual(['max_queued_turns']);
    expect((await limits()).max_agents).toBe(12);
    // The shards got the new provider: the new agent's turn is served by it.
    expect((await c.send('talker', 'hi', { sender: 'r1' })).content).toBe('Hello, world');
    expect(api.requests.some((q) => q.headers.authorization === 'Bearer k-reload')).toBe(true);
    // Reading the same file again changes nothing more.
    expect(await c.reloadConfig()).toEqual({ applied: [], restart_required: ['max_queued_turns'] });
  });

  it('replaces a changed agent entry, and leaves agents the file no longer names', async () => {
    writeConfig({ ...BASE, max_agents: 12, max_queued_turns: 5, log_level: 'info', agents: { assistant: { model: 'echo', description: 'reloaded' } } });
    // `talker` is gone from the file, but its provider too: refused, nothing changed.
    const refused = await c.reloadConfig().catch((e: unknown) => e as { code: number; message: string });
    expect(refused).toMatchObject({ code: 400 });
    expect((refused as { message: string }).message).toMatch(/"fake", which agent "talker" uses; nothing was changed/);
    expect((await c.getAgent('assistant')).description).not.toBe('reloaded');
    await c.deleteAgent('talker');
    const r = await c.reloadConfig();
    expect(r.applied).toEqual(expect.arrayContaining(['agents.assistant', 'providers']));
    expect((await c.getAgent('assistant')).description).toBe('reloaded');
  });

  it('a bad file changes nothing and says why', async () => {
    const before = await limits();
    writeConfig('{"max_agents": 30,');
    const invalid = await c.reloadConfig().catch((e: unknown) => e as { code: number; message: string });
    expect(invalid).toMatchObject({ code: 400 });
    expect((invalid as { message: string }).message).toMatch(/agentd\.json: \(file\) is not valid JSON.*nothing was changed/);
    writeConfig({ ...BASE, max_agents: 30, max_subscriptions: -1 });
    const schema = await c.reloadConfig().catch((e: unknown) => e as { code: number; message: string });
    expect(schema).toMatchObject({ code: 400 });
    expect((schema as { message: string }).message).toMatch(/max_subscriptions must be an integer >= 1.*nothing was changed/);
    expect(await limits()).toEqual(before);
  });

  it('SIGHUP reloads and logs the outcome', async () => {
    writeConfig({ ...BASE, max_agents: 14, max_subscriptions: 77, log_level: 'info' });
    d.proc.kill('SIGHUP');
    await waitFor(async () => (await limits()).max_subscriptions === 77, 'SIGHUP applied max_subscriptions');
    expect((await limits()).max_agents).toBe(14);
    await waitFor(() => d.stderr().includes('configuration reloaded'), 'the reload logged');
    const line = d.stderr().split('\n').find((l) => l.includes('configuration reloaded'))!;
    expect(JSON.parse(line)).toMatchObject({ applied: expect.arrayContaining(['max_agents', 'max_subscriptions']) });
    writeConfig('not json');
    d.proc.kill('SIGHUP');
    await waitFor(() => d.stderr().includes('configuration reload failed'), 'the refused reload logged');
    expect((await limits()).max_agents).toBe(14);
    expect(d.proc.exitCode).toBe(null);
  });
});
