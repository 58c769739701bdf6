/**
 * Scoped tokens over the HTTP door: the same table holds a request to its
 * token's scopes and binding as on the socket protocol (tokens.test.ts), so
 * a chat token bound to sender alice can speak as alice and nothing more:
 * it follows its own runs (GET, SSE resumed with Last-Event-ID) and approves
 * its own tool calls, and bob's runs answer it as runs that do not exist.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentdClient } from '../../src/client/index.ts';
import { cleanup, startDaemon, type Daemon } from '../helpers/daemon.ts';
import { curl, httpTarget, readSse, sseEvents, type HttpTarget, type SseEvent } from '../helpers/http.ts';

let d: Daemon;
let admin: AgentdClient;
let t: HttpTarget;
let alice: string;

beforeAll(async () => {
  d = await startDaemon({ workers: 1, config: { agents: { assistant: { model: 'echo', approve_tools: ['peers'] }, other: { model: 'echo' } } }, args: ['--http', '127.0.0.1:0'] });
  t = httpTarget(d);
  admin = await d.client();
  await admin.send('assistant', 'bob writes a secret plan', { sender: 'bob' });
  alice = (await admin.createToken({ scopes: ['chat'], agents: ['assistant'], sender: 'alice' })).token;
});
afterAll(async () => {
  await admin?.close();
  if (d !== undefined) await cleanup(d);
});

const json = (body: unknown): string[] => ['-H', 'content-type: application/json', '--data-binary', JSON.stringify(body)];
const errorOf = (r: { json: unknown }): { code: number; message: string } => (r.json as { error: { code: number; message: string } }).error;

describe('a chat token bound to sender alice, over HTTP', () => {
  it('runs a turn as alice and reads her own history', async () => {
    const turn = await curl(t, '/v1/agents/assistant/conversations/alice/turns', ['-X', 'POST', ...json({ content: 'hello from alice' })], alice);
    expect(turn.status, turn.body).toBe(200);
    const mine = await curl(t, '/v1/agents/assistant/conversations/alice/history', [], alice);
    expect(mine.status).toBe(200);
    expect(JSON.stringify(mine.json)).toContain('hello from alice');
  });

  it("cannot read bob's history (403) and learns nothing of it", async () => {
    const r = await curl(t, '/v1/agents/assistant/conversations/bob/history', [], alice);
    expect(r.status).toBe(403);
    expect(errorOf(r).message).toContain('sender "alice"');
    expect(r.body).not.toContain('secret plan');
  });

  it('cannot speak as bob or to an agent outside its binding', async () => {
    const asBob = await curl(t, '/v1/agents/assistant/conversations/bob/turns', ['-X', 'POST', ...json({ content: 'impersonation' })], alice);
    expect(asBob.status).toBe(403);
    const other = await curl(t, '/v1/agents/other/conversations/alice/turns', ['-X', 'POST', ...json({ content: 'x' })], alice);
    expect(other.status).toBe(403);
    const history = await admin.history('assistant', 'bob');
    expect(history.messages.map((m) => m.content)).not.toContain('impersonation');
  });

  it('cannot create an agent or add an MCP server: 403 naming agents:write, and nothing changes', async () => {
    const create = await curl(t, '/v1/agents', ['-X', 'POST', ...json({ name: 'evil', config: { model: 'echo' } })], alice);
    expect(create.status).toBe(403);
    expect(errorOf(create).message).toContain('"agents:write"');
    const mcp = await curl(t, '/v1/agents/assistant/mcps', ['-X', 'PUT', ...json({ name: 'shell', command: '/bin/sh', args: ['-c', 'id'] })], alice);
    expect(mcp.status).toBe(403);
    expect(errorOf(mcp).message).toContain('"agents:write"');
    expect((await admin.listAgents()).map((a) => a.name)).not.toContain('evil');
    expect(await admin.listMcps('assistant')).toEqual([]);
  });

  it('cuts a revoked token\'s open event stream at once', async () => {
    const temp = await admin.createToken({ scopes: ['read'] });
    const res = await fetch(`${t.base}/v1/events`, { headers: { authorization: `Bearer ${temp.token}`, accept: 'text/event-stream' } });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await admin.revokeToken(temp.id);
    // Ends (done, or the connection reset) instead of streaming every agent event on.
    for (;;) {
      const r = await reader.read().catch(() => ({ done: true }));
      if (r.done) break;
    }
  });

  it('is refused at once once revoked (401)', async () => {
    const temp = await admin.createToken({ scopes: ['read'] });
    expect((await curl(t, '/v1/stats', [], temp.token)).status).toBe(200);
    await admin.revokeToken(temp.id);
    const r = await curl(t, '/v1/stats', [], temp.token);
    expect(r.status).toBe(401);
  });
});

const WORDS = Array.from({ length: 60 }, (_, i) => `w${i}`).join(' ');
const auth = (token: string, more: Record<string, string> = {}): Record<string, string> => ({ authorization: `Bearer ${token}`, ...more });
const textOf = (evs: readonly SseEvent[]): string => evs.filter((e) => e.event === 'chunk').map((e) => e.data.content as string).join('');

/** Starts a detached turn as SSE with `token` and reads it until `stop` says so; the run goes on. */
async function startDetached(token: string, sender: string, content: string, stop: (seen: SseEvent[]) => boolean): Promise<{ runId: string; seen: SseEvent[] }> {
  const seen: SseEvent[] = [];
  const init = { method: 'POST', headers: auth(token, { 'content-type': 'application/json' }), body: JSON.stringify({ content, stream: true, detach: true }) };
  const r = await readSse(`${t.base}/v1/agents/assistant/conversations/${sender}/turns`, init, (ev) => {
    seen.push(ev);
    return !stop(seen);
  });
  expect(r.status, r.body).toBe(200);
  return { runId: seen[0]!.data.run_id as string, seen };
}

/** Status and error body of a refused request by run id, the run id written as <id>. */
const refusal = (r: { status: number; body: string }, runId: string): { status: number; body: string } => ({ status: r.status, body: r.body.replaceAll(runId, '<id>') });

describe("alice's runs over HTTP", () => {
  it('reads its detached run and resumes it as SSE after Last-Event-ID, with no gap and no duplicate', async () => {
    const { runId, seen } = await startDetached(alice, 'alice', WORDS, (evs) => evs.filter((e) => e.event === 'chunk').length >= 5);
    const lastId = seen.at(-1)!.id!;
    const got = await curl(t, `/v1/runs/${runId}`, [], alice);
    expect(got.status, got.body).toBe(200);
    expect(got.json).toMatchObject({ run_id: runId, agent: 'assistant', sender: 'alice', detached: true });
    const rest = await sseEvents(`${t.base}/v1/runs/${runId}/events`, { headers: auth(alice, { 'last-event-id': String(lastId) }) });
    expect(rest.status, rest.body).toBe(200);
    expect(rest.events[0]!.id!).toBeGreaterThan(lastId);
    expect(rest.events.at(-1)).toMatchObject({ event: 'end', data: { stop_reason: 'text' } });
    const ids = [...seen, ...rest.events].map((e) => e.id!);
    expect(ids).toEqual([...new Set(ids)].sort((a, b) => a - b));
    expect(textOf(seen) + textOf(rest.events)).toBe(WORDS);
  });

  it('approves its own tool call and follows the run on to its end', async () => {
    const { runId, seen } = await startDetached(alice, 'alice', '/call peers {}', (evs) => evs.at(-1)!.event === 'approval_required');
    expect(seen.at(-1)!.data).toMatchObject({ call_id: 'call_1_1', tool: 'peers' });
    const ok = await curl(t, `/v1/runs/${runId}/approvals`, ['-X', 'POST', ...json({ call_id: 'call_1_1', approve: true })], alice);
    expect(ok.status, ok.body).toBe(200);
    const rest = await sseEvents(`${t.base}/v1/runs/${runId}/events`, { headers: auth(alice, { 'last-event-id': String(seen.at(-1)!.id) }) });
    expect(rest.events[0]).toMatchObject({ event: 'tool_result', data: { call_id: 'call_1_1', is_error: false } });
    expect(rest.events.at(-1)).toMatchObject({ event: 'end', data: { stop_reason: 'text' } });
  });

  it("gets bob's run answered exactly as a run that does not exist (404), and nothing of it", async () => {
    const { runId: bobRun } = await startDetached(t.token, 'bob', '/call peers {}', (evs) => evs.at(-1)!.event === 'approval_required');
    const ghost = bobRun.replace(/-[0-9a-z]+$/, '-zzzzzz'); // the same pair hash, no run
    const none = refusal(await curl(t, `/v1/runs/${ghost}`, [], alice), ghost);
    expect(none.status).toBe(404);
    expect(refusal(await curl(t, `/v1/runs/${bobRun}`, [], alice), bobRun)).toEqual(none);
    const join = async (id: string) => refusal(await sseEvents(`${t.base}/v1/runs/${id}/events`, { headers: auth(alice, { 'last-event-id': '0' }) }), id);
    const joined = await join(bobRun);
    expect(joined).toEqual(await join(ghost));
    expect(joined.status).toBe(404);
    expect(joined.body).not.toContain('peers');
    const approve = async (id: string) => refusal(await curl(t, `/v1/runs/${id}/approvals`, ['-X', 'POST', ...json({ call_id: 'call_1_1', approve: true })], alice), id);
    const approved = await approve(bobRun);
    expect(approved).toEqual(await approve(ghost));
    expect(approved.status).toBe(404);
    // Bob's run still waits; the admin denies it.
    expect((await curl(t, `/v1/runs/${bobRun}`)).json).toMatchObject({ sender: 'bob', status: 'waiting', pending_approvals: [{ call_id: 'call_1_1' }] });
    expect((await curl(t, `/v1/runs/${bobRun}/approvals`, ['-X', 'POST', ...json({ call_id: 'call_1_1', approve: false })])).status).toBe(200);
  });
});
