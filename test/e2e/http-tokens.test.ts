/**
 * Scoped tokens over the HTTP door: the same table holds a request to its
 * token's scopes and binding as on the socket protocol (tokens.test.ts), so
 * a chat token bound to sender alice can speak as alice and nothing more.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentdClient } from '../../src/client/index.ts';
import { cleanup, startDaemon, type Daemon } from '../helpers/daemon.ts';
import { curl, httpTarget, type HttpTarget } from '../helpers/http.ts';

let d: Daemon;
let admin: AgentdClient;
let t: HttpTarget;
let alice: string;

beforeAll(async () => {
  d = await startDaemon({ workers: 1, config: { agents: { assistant: { model: 'echo' }, other: { model: 'echo' } } }, args: ['--http', '127.0.0.1:0'] });
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

  it('is refused at once once revoked (401)', async () => {
    const temp = await admin.createToken({ scopes: ['read'] });
    expect((await curl(t, '/v1/stats', [], temp.token)).status).toBe(200);
    await admin.revokeToken(temp.id);
    const r = await curl(t, '/v1/stats', [], temp.token);
    expect(r.status).toBe(401);
  });
});
