/** Agents, skills and harness capabilities over real sockets (PROTOCOL §4 agents/skills, §5). */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentdClient, StreamEvent } from '../../src/client/index.ts';
import { cleanup, collect, makeHome, startDaemon, type Daemon, waitRunning, testClient } from '../helpers/daemon.ts';
import { end } from '../helpers/events.ts';

const SECRET_ENV = 'ghp_very_secret_token_123';
const SECRET_AUTH = 'Bearer sekret-auth-value-456';

const HARNESS = `
export const tools = [
  { name: 'probe_search', description: 'search as the caller, trying to name another agent',
    parameters: { type: 'object', properties: { query: { type: 'string' } } },
    run: async (args, ctx) => JSON.stringify(await ctx.capabilities.sessions.search(args.query, { agent: 'other', limit: 20 })) },
  { name: 'probe_caps', description: 'which capabilities this harness holds',
    run: (args, ctx) => JSON.stringify(Object.keys(ctx.capabilities).sort()) },
  { name: 'probe_peers', description: 'peers through a granted capability',
    run: async (args, ctx) => ctx.capabilities.peers ? JSON.stringify(await ctx.capabilities.peers.list()) : 'no peers capability' },
  { name: 'boom', description: 'always throws', run: () => { throw new Error('kaboom'); } },
];
`;

function skill(home: string, name: string, text: string): void {
  mkdirSync(join(home, 'skills', name), { recursive: true });
  writeFileSync(join(home, 'skills', name, 'SKILL.md'), text);
}

let d: Daemon;
beforeAll(async () => {
  const home = makeHome({
    agents: {
      assistant: { model: 'echo' },
      holder: { model: 'echo', mcps: { gh: { command: 'gh-mcp', env: { GITHUB_TOKEN: SECRET_ENV }, headers: { Authorization: SECRET_AUTH } } } },
      other: { model: 'echo' },
      prober: { model: 'echo', harnesses: [{ module: 'probe', capabilities: ['sessions.search'] }] },
      peerer: { model: 'echo', harnesses: [{ module: 'probe', capabilities: ['peers.list'] }] },
      limited: { model: 'echo', skills: ['deploy'] },
      narrow: { model: 'echo', tools: ['peers'] },
      once: { model: 'echo', max_iterations: 1 },
    },
  });
  mkdirSync(join(home, 'harness'));
  writeFileSync(join(home, 'harness', 'probe.mjs'), HARNESS);
  skill(home, 'deploy', '---\nname: deploy\ndescription: How we ship\n---\nRun `make ship`.\n');
  skill(home, 'secret-ops', '---\nname: secret-ops\ndescription: Not for everyone\n---\nThe vault code.\n');
  skill(home, 'broken', 'no front matter here');
  skill(home, 'misnamed', '---\nname: other-name\ndescription: x\n---\nbody');
  d = await startDaemon({ home });
});
afterAll(() => cleanup(d));

const client = (): Promise<AgentdClient> => testClient(d);
const toolResult = (evs: StreamEvent[]) => evs.find((e) => e.type === 'tool_result') as Extract<StreamEvent, { type: 'tool_result' }>;

describe('agent management', () => {
  it('create, get, list, update with a merge patch, delete', async () => {
    const c = await client();
    const created = await c.request('create_agent', { name: 'fresh.one', config: { model: 'echo', description: 'new', skills: ['deploy'], echo: { delay_ms: 1 } } });
    expect(created.agent_info).toMatchObject({ name: 'fresh.one', description: 'new', model: 'echo', max_iterations: 16, thinking: false, skills: ['deploy'], mcps: [] });
    await expect(c.request('create_agent', { name: 'fresh.one', config: {} })).rejects.toMatchObject({ code: 409 });
    const patched = await c.request('update_agent', { name: 'fresh.one', config: { description: null, echo: { cpu_us: 5 }, thinking: true } });
    expect(patched.agent_info).toMatchObject({ description: '', thinking: true, config: { echo: { delay_ms: 1, cpu_us: 5 } } });
    const names = ((await c.request('list_agents')).agent_list as { agents: { name: string }[] }).agents.map((a) => a.name);
    expect(names).toEqual([...names].sort());
    expect(names).toContain('fresh.one');
    await c.request('delete_agent', { name: 'fresh.one' });
    await expect(c.request('get_agent', { name: 'fresh.one' })).rejects.toMatchObject({ code: 404 });
    await expect(c.request('delete_agent', { name: 'fresh.one' })).rejects.toMatchObject({ code: 404 });
    await expect(c.request('update_agent', { name: 'fresh.one', config: {} })).rejects.toMatchObject({ code: 404 });
  });

  const bad: [string, Record<string, unknown>, RegExp][] = [
    ['a name starting with a dot', { name: '.hidden', config: {} }, /create_agent\.name/],
    ['a name with a slash', { name: 'a/b', config: {} }, /create_agent\.name/],
    ['a name too long', { name: 'x'.repeat(65), config: {} }, /create_agent\.name/],
    ['a mistyped field', { name: 'ok1', config: { max_iterations: 'many' } }, /config\.max_iterations must be an integer/],
    ['an unknown field', { name: 'ok2', config: { temperature: 2 } }, /config\.temperature is not a known option/],
    ['a model with no provider', { name: 'ok3', config: { model: 'gpt-x' } }, /config\.provider is required/],
    ['a config that is not a map', { name: 'ok4', config: 'echo' }, /create_agent\.config must be a map/],
  ];
  for (const [what, args, message] of bad) {
    it(`refuses ${what} with a 400 naming the field`, async () => {
      const c = await client();
      await expect(c.request('create_agent', args)).rejects.toMatchObject({ code: 400, message: expect.stringMatching(message) });
    });
  }

  it('a change reaches the shards before the next turn of that agent', async () => {
    const c = await client();
    const before = await collect(c.stream('once', '/call peers {}', { sender: 'upd' }));
    expect(end(before).stop_reason).toBe('max_iterations');
    await c.request('update_agent', { name: 'once', config: { max_iterations: 4 } });
    const after = await collect(c.stream('once', '/call peers {}', { sender: 'upd' }));
    expect(end(after).stop_reason).toBe('text');
  });

  it('delete cancels a running turn, and removes its conversations, search entries and subscriptions', async () => {
    const c = await client();
    await c.request('create_agent', { name: 'doomed', config: { echo: { delay_ms: 30 } } });
    await c.send('doomed', 'zanzibar notes', { sender: 's1' });
    await c.subscribe('bye', 'doomed');
    // 1,000 words at 30 ms: the turn cannot end on its own before the delete reaches it, however slow the machine.
    const running = collect(c.stream('doomed', Array.from({ length: 1_000 }, (_, i) => `w${i}`).join(' '), { sender: 's2' }));
    await waitRunning(c, 'doomed', 's2');
    await c.request('delete_agent', { name: 'doomed' });
    expect(end(await running)).toMatchObject({ stop_reason: 'cancelled', error: 'agent deleted' });
    expect(((await c.request('list_conversations', { agent: 'doomed' })).conversation_list as { conversations: unknown[] }).conversations).toEqual([]);
    expect(((await c.request('search_sessions', { query: 'zanzibar' })).session_hits as { hits: unknown[] }).hits).toEqual([]);
    expect((await c.subscriptions()).filter((s) => s.target_agent === 'doomed')).toEqual([]);
    await expect(c.send('doomed', 'hi')).rejects.toMatchObject({ code: 404 });
  });
});

describe('skills', () => {
  it('lists well-formed skills, skips malformed ones with a logged reason, and serves bodies', async () => {
    const c = await client();
    const { skill_list } = (await c.request('list_skills')) as { skill_list: { skills: { name: string; description: string }[] } };
    expect(skill_list.skills).toEqual([
      { name: 'deploy', description: 'How we ship' },
      { name: 'secret-ops', description: 'Not for everyone' },
    ]);
    expect(d.stderr()).toMatch(/"skill":"broken".*front matter/);
    expect(d.stderr()).toMatch(/"skill":"misnamed".*differs from its folder/);
    expect(await c.request('get_skill', { name: 'deploy' })).toEqual({ skill_body: { name: 'deploy', body: 'Run `make ship`.\n' } });
    await expect(c.request('get_skill', { name: 'nope' })).rejects.toMatchObject({ code: 404 });
    await expect(c.request('get_skill', { name: '../agentd.json' })).rejects.toMatchObject({ code: 404 });
  });

  it("an agent's skills list limits what its harness sees; a skill outside it is refused", async () => {
    const c = await client();
    const listed = await collect(c.stream('limited', '/call skill {}', { sender: 'sk' }));
    expect(JSON.parse(toolResult(listed).output)).toEqual([{ name: 'deploy', description: 'How we ship' }]);
    const refused = await collect(c.stream('limited', '/call skill {"name": "secret-ops"}', { sender: 'sk' }));
    expect(toolResult(refused)).toMatchObject({ is_error: true, output: expect.stringMatching(/^404: skill "secret-ops" is not one of this agent's skills/) });
    const read = await collect(c.stream('limited', '/call skill {"name": "deploy"}', { sender: 'sk' }));
    expect(toolResult(read)).toMatchObject({ is_error: false, output: 'Run `make ship`.\n' });
  });
});

describe('harness capabilities', () => {
  it("peers never carries another agent's secrets: not to the client, not to the model, not to a harness", async () => {
    const bytes: Buffer[] = [];
    const c = await d.client({ onRawFrame: (_id, _f, body) => bytes.push(Buffer.from(body)) });
    onTestFinished(() => c.close());
    const evs = await collect(c.stream('assistant', '/call peers {}', { sender: 'peers' }));
    const peers = JSON.parse(toolResult(evs).output) as { name: string; config: unknown; mcps: string[] }[];
    expect(peers.find((p) => p.name === 'holder')).toMatchObject({ config: {}, mcps: ['gh'] });
    const viaHarness = await collect(c.stream('peerer', '/call probe_peers {}', { sender: 'peers' }));
    expect(JSON.parse(toolResult(viaHarness).output).every((p: { config: object }) => Object.keys(p.config).length === 0)).toBe(true);
    // The model saw the tool output: the echo model repeats it as text, so it is in these bytes too.
    const all = Buffer.concat(bytes);
    expect(all.includes(SECRET_ENV)).toBe(false);
    expect(all.includes(SECRET_AUTH)).toBe(false);
    expect(end(evs).stop_reason).toBe('text');
  });

  it('sessions.search is forced to the calling agent, whatever agent the harness names', async () => {
    const c = await client();
    await c.send('other', 'the needle is here', { sender: 'x' });
    await c.send('prober', 'a needle of my own', { sender: 'z' }); // same sender: search is scoped to it (memory-scope.test.ts)
    const evs = await collect(c.stream('prober', '/call probe_search {"query": "needle"}', { sender: 'z' }));
    const hits = JSON.parse(toolResult(evs).output) as { agent: string }[];
    expect(hits.length).toBeGreaterThan(0);
    expect(new Set(hits.map((h) => h.agent))).toEqual(new Set(['prober']));
  });

  it('a harness holds exactly the capabilities it was granted', async () => {
    const c = await client();
    const evs = await collect(c.stream('prober', '/call probe_caps {}', { sender: 'caps' }));
    expect(JSON.parse(toolResult(evs).output)).toEqual(['sessions']);
    const none = await collect(c.stream('prober', '/call probe_peers {}', { sender: 'caps' }));
    expect(toolResult(none).output).toBe('no peers capability');
  });

  it('a throwing tool is an error result, not a failed turn', async () => {
    const c = await client();
    const evs = await collect(c.stream('prober', '/call boom {}', { sender: 'boom' }));
    expect(toolResult(evs)).toMatchObject({ is_error: true, output: 'kaboom' });
    expect(end(evs).stop_reason).toBe('text');
  });

  it('an agent that lists tools has exactly those', async () => {
    const c = await client();
    const evs = await collect(c.stream('narrow', '/call skill {}', { sender: 'n' }));
    expect(toolResult(evs)).toMatchObject({ is_error: true, output: 'unknown tool "skill"' });
    const ok = await collect(c.stream('narrow', '/call peers {}', { sender: 'n' }));
    expect(toolResult(ok).is_error).toBe(false);
  });
});

describe('seeding', () => {
  it('agentd.json seeds agents on the first start only', async () => {
    const first = await startDaemon({ config: { agents: { seeded: { model: 'echo' } } } });
    const c1 = await first.client();
    await c1.request('create_agent', { name: 'made-later', config: {} });
    await c1.close();
    await first.stop();
    const again = await startDaemon({ home: first.home, config: { agents: { ignored: { model: 'echo' } } } });
    onTestFinished(() => cleanup(again));
    const c = await again.client();
    onTestFinished(() => c.close());
    const names = ((await c.request('list_agents')).agent_list as { agents: { name: string }[] }).agents.map((a) => a.name);
    expect(names).toEqual(['made-later', 'seeded']);
  });
});
