/**
 * Issue 29, tokens with scopes, over the socket protocol: a daemon on
 * SQLite, tokens made with agentctl and the client library, each refused
 * exactly what its scopes and binding leave out (403), revoked at once
 * (401 on the next connection, the live one closed), bad input answered 400,
 * and no secret in the log or in list_tokens. A token bound to a sender
 * follows and approves its own runs by id, and gets another's runs answered
 * exactly as runs that do not exist.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { AgentdClient, CreatedToken, StreamEvent } from '../../src/client/index.ts';
import { encodeBody, encodeFrame } from '../../src/shared/codec.ts';
import { cleanup, collect, startDaemon, type Daemon } from '../helpers/daemon.ts';
import { ctl } from '../helpers/cli.ts';
import { RawConn } from '../helpers/raw.ts';
import { text, types, until } from '../helpers/events.ts';

// `assistant` asks before running `peers` (the echo model calls it on "/call peers {}").
const CONFIG = { agents: { assistant: { model: 'echo', approve_tools: ['peers'] }, other: { model: 'echo' } } };

let d: Daemon;
let admin: AgentdClient;
const made: string[] = [];

beforeAll(async () => {
  d = await startDaemon({ config: CONFIG, workers: 1 });
  admin = await d.client();
  await admin.send('assistant', 'bob writes a secret plan', { sender: 'bob' });
});
afterAll(async () => {
  await admin?.close();
  if (d !== undefined) await cleanup(d);
});

async function create(args: Parameters<AgentdClient['createToken']>[0]): Promise<CreatedToken> {
  const t = await admin.createToken(args);
  made.push(t.token);
  return t;
}

async function as(token: string): Promise<AgentdClient> {
  const c = await d.tcpClient({ token });
  onTestFinished(() => c.close());
  return c;
}

const refusal = (p: Promise<unknown>): Promise<unknown> => expect(p).rejects.toMatchObject({ code: 403 });

describe('a chat token bound to sender alice and agent assistant', () => {
  let alice: string;

  beforeAll(async () => {
    const r = await ctl(d.socketPath, ['tokens', 'create', '--scope', 'chat', '--agent', 'assistant', '--sender', 'alice', '--label', 'alice app', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { token: CreatedToken };
    expect(out.token).toMatchObject({ scopes: ['chat'], agents: ['assistant'], sender: 'alice', label: 'alice app' });
    expect(out.token.token).toMatch(/^agd_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    alice = out.token.token;
    made.push(alice);
  });

  it('streams as alice to its agent, the sender filled in', async () => {
    const c = await as(alice);
    const evs = await collect(c.stream('assistant', 'hello from alice'));
    expect(evs.at(-1)).toMatchObject({ type: 'end', stop_reason: 'text' });
    const mine = (await c.request('get_conversation_history', { agent: 'assistant' })).conversation_history as { sender: string; messages: unknown[] };
    expect(mine).toMatchObject({ sender: 'alice', messages: [{ content: 'hello from alice' }, { content: 'hello from alice' }] });
    const stored = (await admin.request('get_conversation_history', { agent: 'assistant', sender: 'alice' })).conversation_history as { messages: unknown[] };
    expect(stored.messages).toHaveLength(2);
  });

  it('cannot read bob\'s history, speak as bob, or address another agent (403)', async () => {
    const c = await as(alice);
    await expect(c.request('get_conversation_history', { agent: 'assistant', sender: 'bob' })).rejects.toMatchObject({ code: 403, message: expect.stringMatching(/only as sender "alice", not "bob"/) });
    await refusal(c.send('assistant', 'I am bob', { sender: 'bob' }));
    await refusal(c.send('other', 'hi'));
    await refusal(c.request('search_sessions', { query: 'plan', sender: 'bob' }));
    const listed = (await c.request('list_conversations', {})).conversation_list as { conversations: { sender: string }[] };
    expect(listed.conversations.map((x) => x.sender)).toEqual(['alice']);
  });

  it('cannot create an agent or add an MCP server (403 naming agents:write)', async () => {
    const c = await as(alice);
    await expect(c.request('create_agent', { name: 'rogue', config: { model: 'echo' } })).rejects.toMatchObject({ code: 403, message: expect.stringContaining('this token lacks the "agents:write" scope') });
    await expect(c.request('upsert_mcp', { agent: 'assistant', config: { name: 'sh', command: '/bin/sh' } })).rejects.toMatchObject({ code: 403, message: expect.stringContaining('"agents:write"') });
    await refusal(c.request('list_tokens', {}));
    expect((await admin.listAgents()).map((a) => a.name)).not.toContain('rogue');
    expect(((await admin.request('list_mcps', {})).mcp_list as { mcps: unknown[] }).mcps).toEqual([]);
  });

  it('agentctl with the token over TCP is refused the same way (exit 1, error 403)', async () => {
    const r = await ctl(null, ['--tcp', `127.0.0.1:${d.port}`, '--token', alice, 'agents', 'create', 'rogue'], { AGENTD_TOKEN: undefined, AGENTD_HOME: undefined });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/403.*lacks the "agents:write" scope/);
    expect(r.stderr).not.toContain(alice);
  });
});

describe('other scopes, revocation, bad input', () => {
  it('a read token reads but cannot stream', async () => {
    const t = await create({ scopes: ['read'] });
    const c = await as(t.token);
    await expect(collect(c.stream('assistant', 'hi', { sender: 'carol' }))).rejects.toMatchObject({ code: 403, message: expect.stringContaining('"chat" scope') });
    const h = (await c.request('get_conversation_history', { agent: 'assistant', sender: 'bob' })).conversation_history as { messages: unknown[] };
    expect(h.messages.length).toBeGreaterThan(0);
    await c.ping();
  });

  it('a read token sees agents and MCP servers without their secrets', async () => {
    await admin.request('upsert_mcp', { agent: 'other', config: { name: 'fs', command: 'true', env: { API_KEY: 'hush-hush-123' } } });
    const c = await as((await create({ scopes: ['read'] })).token);
    const mcps = JSON.stringify(await c.listMcps('other'));
    expect(mcps).toContain('API_KEY');
    expect(mcps).not.toContain('hush-hush-123');
    expect((await c.request('get_agent', { name: 'other' })).agent_info).toMatchObject({ name: 'other', mcps: ['fs'], config: {} });
    expect(JSON.stringify(await c.listAgents())).not.toContain('hush-hush-123');
    expect(JSON.stringify(await admin.listMcps('other'))).toContain('hush-hush-123');
    await admin.deleteMcp('other', 'fs');
  });

  it('a revoked token is cut at once and refused (401) on the next connection', async () => {
    const t = await create({ scopes: ['chat'] });
    const live = await as(t.token);
    await live.ping();
    const r = await ctl(d.socketPath, ['tokens', 'revoke', t.id]);
    expect(r.code, r.stderr).toBe(0);
    await live.closed();
    await expect(live.ping()).rejects.toBeDefined();
    await expect(d.tcpClient({ token: t.token })).rejects.toMatchObject({ code: 401, message: 'wrong token' });
    expect((await admin.listTokens()).map((x) => x.id)).not.toContain(t.id);
    await expect(admin.revokeToken(t.id)).rejects.toMatchObject({ code: 404 });
  });

  it('answers bad input with 400 and stores nothing', async () => {
    const before = (await admin.listTokens()).length;
    for (const args of [{ scopes: [] }, { scopes: ['root'] }, {}, { scopes: 'chat' }, { scopes: ['chat'], agents: [] }, { scopes: ['chat'], sender: 'event:x' }, { scopes: ['admin'], sender: 'alice' }]) {
      await expect(admin.request('create_token', args as never), JSON.stringify(args)).rejects.toMatchObject({ code: 400, message: expect.stringContaining('create_token.') });
    }
    expect((await admin.listTokens()).length).toBe(before);
    const r = await ctl(d.socketPath, ['tokens', 'create', '--scope', 'root']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('unknown scope "root"');
    const none = await ctl(d.socketPath, ['tokens', 'create']);
    expect(none.stderr).toContain('needs --scope');
  });

  it('holds requests sent behind a scoped auth until the lookup is done, and serves none after a refusal', async () => {
    const t = await create({ scopes: ['read'] });
    const ok = await RawConn.openTcp(d.port!);
    onTestFinished(() => ok.close());
    ok.write(Buffer.concat([encodeFrame(1, 0, encodeBody({ auth: { token: t.token } })), encodeFrame(2, 0, encodeBody({ ping: {} })), encodeFrame(3, 0, encodeBody({ create_agent: { name: 'x', config: {} } })),
      // Larger than an unauthenticated connection's 1 KiB: sent behind a valid auth, it is served too.
      encodeFrame(4, 0, encodeBody({ get_conversation_history: { agent: 'a'.repeat(4000), sender: 'nobody' } }))]));
    const frames = await ok.until((f) => f.length === 4);
    expect(frames.map((f) => [f.id, Object.keys(f.body)[0]])).toEqual([[1, 'pong'], [2, 'pong'], [3, 'error'], [4, 'error']]);
    expect(frames[2]!.body.error.code).toBe(403);
    expect(frames[3]!.body.error.code).not.toBe(401);
    const bad = await RawConn.openTcp(d.port!);
    onTestFinished(() => bad.close());
    const wrong = `${t.token.slice(0, -1)}${t.token.endsWith('A') ? 'B' : 'A'}`; // one character off
    bad.write(Buffer.concat([encodeFrame(1, 0, encodeBody({ auth: { token: wrong } })), encodeFrame(2, 0, encodeBody({ ping: {} }))]));
    await bad.waitClosed();
    expect(bad.frames.map((f) => [f.id, f.body.error?.code])).toEqual([[1, 401]]);
  });

  it('never shows a secret in list_tokens or the log', async () => {
    const listed = JSON.stringify(await admin.listTokens());
    const r = await ctl(d.socketPath, ['tokens', 'list']);
    expect(r.code, r.stderr).toBe(0);
    expect(made.length).toBeGreaterThan(2);
    for (const token of made) {
      const secret = token.slice('agd_'.length + 17);
      expect(secret).toHaveLength(43);
      expect(listed).not.toContain(secret);
      expect(r.stdout).not.toContain(secret);
      expect(d.stderr()).not.toContain(secret);
    }
  });
});

const PEERS = '/call peers {}';
const seqOf = (e: StreamEvent): number => e.seq!;
const runIdOf = (evs: StreamEvent[]): string => (evs[0] as { run_id: string }).run_id;

/** The refusal a request by run id gets, its run id written as <id> (the one part that may differ between two refusals). */
async function refusalFor(p: Promise<unknown>, runId: string): Promise<{ code: number; message: string }> {
  const err = await p.then(() => null, (e: unknown) => e as { code: number; message: string });
  if (err === null) throw new Error(`request for run ${runId} was not refused`);
  return { code: err.code, message: err.message.replaceAll(runId, '<id>') };
}

async function rest(it: AsyncIterator<StreamEvent>): Promise<StreamEvent[]> {
  const seen: StreamEvent[] = [];
  for (let r = await it.next(); !r.done; r = await it.next()) seen.push(r.value);
  return seen;
}

describe('runs by id with a token bound to sender alice', () => {
  let alice: string;
  beforeAll(async () => {
    alice = (await create({ scopes: ['chat'], agents: ['assistant'], sender: 'alice' })).token;
  });

  it('reads its detached run with get_run and joins it after a seq', async () => {
    const c = await as(alice);
    const evs = await collect(c.stream('assistant', 'one two three four', { detach: true }));
    const runId = runIdOf(evs);
    expect(await c.getRun(runId)).toMatchObject({ run_id: runId, agent: 'assistant', sender: 'alice', status: 'done', detached: true });
    const firstChunk = evs.findIndex((e) => e.type === 'chunk');
    const joined = await collect((await as(alice)).joinRun(runId, seqOf(evs[firstChunk]!)));
    expect(seqOf(joined[0]!)).toBeGreaterThan(seqOf(evs[firstChunk]!));
    expect(text(joined)).toBe(text(evs.slice(firstChunk + 1)));
    expect(joined.at(-1)).toMatchObject({ type: 'end', stop_reason: 'text', seq: seqOf(evs.at(-1)!) });
  });

  it('joins its waiting run live and approves its own tool call', async () => {
    const c = await as(alice);
    const own = c.stream('assistant', PEERS, { detach: true })[Symbol.asyncIterator]();
    const seen = await until(own, 'approval_required');
    const runId = runIdOf(seen);
    const joiner = await as(alice);
    const join = joiner.joinRun(runId)[Symbol.asyncIterator]();
    expect(types(await until(join, 'approval_required'))).toEqual(types(seen));
    expect(await joiner.getRun(runId)).toMatchObject({ status: 'waiting', pending_approvals: [{ call_id: 'call_1_1', tool: 'peers' }] });
    await joiner.approveTool(runId, 'call_1_1', true);
    const after = await rest(join);
    expect(after[0]).toMatchObject({ type: 'tool_result', call_id: 'call_1_1', is_error: false });
    expect(after.at(-1)).toMatchObject({ type: 'end', stop_reason: 'text' });
    expect((await rest(own)).map(seqOf)).toEqual(after.map(seqOf));
    expect(await c.getRun(runId)).toMatchObject({ status: 'done', pending_approvals: [] });
  });

  it("gets bob's run answered exactly as a run that does not exist, and nothing of it", async () => {
    const bobs = admin.stream('assistant', PEERS, { sender: 'bob', detach: true })[Symbol.asyncIterator]();
    const bobRun = runIdOf(await until(bobs, 'approval_required'));
    const ghost = bobRun.replace(/-[0-9a-z]+$/, '-zzzzzz'); // the same pair hash (so the same worker thread), no run
    const c = await as(alice);
    const none = await refusalFor(c.getRun(ghost), ghost);
    expect(none).toEqual({ code: 404, message: 'no run "<id>" (unknown, or ended more than run_retention_ms ago)' });
    expect(await refusalFor(c.getRun(bobRun), bobRun)).toEqual(none);
    // A forged only_pair is replaced by the token's own.
    expect(await refusalFor(c.request('get_run', { run_id: bobRun, only_pair: { sender: 'bob' } }), bobRun)).toEqual(none);
    expect(await refusalFor(c.approveTool(bobRun, 'call_1_1', true), bobRun)).toEqual(await refusalFor(c.approveTool(ghost, 'call_1_1', true), ghost));
    expect(await refusalFor(c.approveTool(bobRun, 'call_9_9', false), bobRun)).toEqual(none); // not the 409 of a call it does not wait on
    // A join: one error frame each, the same, and no frame of bob's run before it.
    const raw = await RawConn.openTcp(d.port!);
    onTestFinished(() => raw.close());
    raw.send(1, { auth: { token: alice } });
    await raw.request(1);
    raw.send(2, { join_run: { run_id: bobRun } });
    raw.send(3, { join_run: { run_id: ghost, after_seq: 0 } });
    const [mine, ghostly] = [await raw.request(2), await raw.request(3)];
    expect(mine).toHaveLength(1);
    expect(ghostly).toHaveLength(1);
    expect(mine[0]!.body.error.message.replaceAll(bobRun, '<id>')).toBe(none.message);
    expect(ghostly[0]!.body.error.message.replaceAll(ghost, '<id>')).toBe(none.message);
    expect(JSON.stringify(raw.frames)).not.toContain('peers');
    // Bob's run is untouched: still waiting on its call, which the admin then approves.
    expect(await admin.getRun(bobRun)).toMatchObject({ sender: 'bob', status: 'waiting', pending_approvals: [{ call_id: 'call_1_1' }] });
    await admin.approveTool(bobRun, 'call_1_1', false, 'done testing');
    expect((await rest(bobs)).at(-1)).toMatchObject({ type: 'end', stop_reason: 'text' });
  });

  it('refuses a malformed only_pair with 400, and a read token bound to alice approve_tool (403)', async () => {
    await expect(admin.request('get_run', { run_id: 'r00000000-zz-1', only_pair: 'alice' })).rejects.toMatchObject({ code: 400, message: 'get_run.only_pair must be a map {agents, sender}' });
    await expect(admin.request('join_run', { run_id: 'r00000000-zz-1', only_pair: { agents: 'assistant' } } as never)).rejects.toMatchObject({ code: 400, message: 'join_run.only_pair.agents must be a list of agent names or null' });
    await expect(admin.request('approve_tool', { run_id: 'r00000000-zz-1', call_id: 'c', approve: true, only_pair: { sender: 7 } } as never)).rejects.toMatchObject({ code: 400, message: 'approve_tool.only_pair.sender must be a string or null' });
    const reader = await as((await create({ scopes: ['read'], sender: 'alice' })).token);
    await expect(reader.approveTool('r00000000-zz-1', 'c', true)).rejects.toMatchObject({ code: 403, message: expect.stringContaining('"chat" scope') });
  });
});
