/**
 * The HTTP door's REST routes driven with curl against a real daemon
 * (docs/http.md): the same dispatch as the socket protocol, the same errors
 * as HTTP statuses, bearer auth, body limits.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, startDaemon, testDaemon, type Daemon } from '../helpers/daemon.ts';
import { curl, curlJson, httpTarget, type HttpTarget } from '../helpers/http.ts';

let d: Daemon;
let t: HttpTarget;
const MAX_BODY = 64 * 1024;
beforeAll(async () => {
  d = await startDaemon({
    workers: 2,
    config: { max_body_bytes: MAX_BODY, agents: { assistant: { model: 'echo' } } },
    args: ['--http', '127.0.0.1:0'],
  });
  t = httpTarget(d);
});
afterAll(() => cleanup(d));

const turn = (agent: string, sender: string, body: unknown): ReturnType<typeof curlJson> => curlJson(t, 'POST', `/v1/agents/${agent}/conversations/${sender}/turns`, body);

describe('authentication', () => {
  it('answers 401 without a token and with a wrong one, and serves the right one', async () => {
    const none = await curl(t, '/v1/ping', [], null);
    expect(none.status).toBe(401);
    expect(none.json).toEqual({ error: { code: 401, message: expect.stringContaining('Authorization: Bearer') } });
    const wrong = await curl(t, '/v1/ping', [], 'not-the-token');
    expect(wrong.status).toBe(401);
    expect(wrong.json).toEqual({ error: { code: 401, message: 'wrong token' } });
    const malformed = await curl(t, '/v1/ping', ['-H', 'Authorization: Basic abc'], null);
    expect(malformed.status).toBe(401);
    expect((await curl(t, '/v1/ping')).json).toEqual({});
  });

  it('refuses a turn without a token before reading its body, and runs nothing', async () => {
    const r = await curl(t, '/v1/agents/assistant/conversations/unauthed/turns', ['-X', 'POST', '--data-binary', '{"content":"should not run"}'], null);
    expect(r.status).toBe(401);
    const history = await curl(t, '/v1/agents/assistant/conversations/unauthed/history');
    expect(history.status).toBe(404);
  });
});

describe('turns', () => {
  it('runs a turn and answers the send reply as JSON', async () => {
    const r = await turn('assistant', 'rest-1', { content: 'hello over http' });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ agent: 'assistant', content: 'hello over http', model: 'echo', run_id: expect.stringMatching(/^r/) });
    const history = await curl(t, '/v1/agents/assistant/conversations/rest-1/history');
    expect(history.status).toBe(200);
    expect(history.json).toMatchObject({ agent: 'assistant', sender: 'rest-1', messages: [{ role: 'user', content: 'hello over http' }, { role: 'assistant', content: 'hello over http' }] });
  });

  it('maps protocol errors to their status: unknown agent 404, bad field 400, refused field 400', async () => {
    const unknown = await turn('nobody', 'u', { content: 'x' });
    expect(unknown.status).toBe(404);
    expect(unknown.json).toEqual({ error: { code: 404, message: 'unknown agent "nobody"' } });
    const badType = await turn('assistant', 'u', { content: 5 });
    expect(badType.status).toBe(400);
    expect((badType.json as { error: { message: string } }).error.message).toContain('body.content');
    const cwd = await turn('assistant', 'u', { content: 'x', cwd: '/tmp' });
    expect(cwd.status).toBe(400);
    expect((cwd.json as { error: { message: string } }).error.message).toContain('cwd is not accepted');
  });

  it('answers bad JSON with 400 and keeps serving on the same connection', async () => {
    const url = `${t.base}/v1/agents/assistant/conversations/badjson/turns`;
    // Two requests on one curl connection (keep-alive): the second one is served after the first's 400.
    const r = await curl(t, '/v1/agents/assistant/conversations/badjson/turns', [
      '-X', 'POST', '--data-binary', '{"content": ',
      '--next', url, '-i', '-H', `Authorization: Bearer ${t.token}`, '-X', 'POST', '--data-binary', '{"content":"fine"}', '-w', '\nCONNECTS=%{num_connects}',
    ]);
    expect(r.status).toBe(400);
    expect(r.body).toContain('body is not valid JSON');
    expect(r.body).toContain('"content":"fine"');
    expect(r.body).toContain('CONNECTS=0'); // the second request reused the first one's connection
    expect(r.body.toLowerCase()).not.toContain('connection: close');
    expect((await curl(t, '/v1/ping')).status).toBe(200);
  });

  it('refuses a body over max_body_bytes with 413 and closes that connection; the daemon serves on', async () => {
    const big = JSON.stringify({ content: 'x'.repeat(MAX_BODY + 10) });
    const r = await curl(t, '/v1/agents/assistant/conversations/big/turns', ['-X', 'POST', '--data-binary', big]);
    expect(r.status).toBe(413);
    expect((r.json as { error: { code: number; message: string } }).error).toMatchObject({ code: 413, message: expect.stringContaining('max_body_bytes') });
    expect(r.headers.toLowerCase()).toContain('connection: close');
    const chunked = await curl(t, '/v1/agents/assistant/conversations/big/turns', ['-X', 'POST', '-H', 'Transfer-Encoding: chunked', '--data-binary', big]);
    expect(chunked.status).toBe(413);
    // Over 1 MiB curl asks `Expect: 100-continue`: refused before any 100, so the body is never sent.
    const file = join(d.home, 'huge-body.json');
    writeFileSync(file, 'x'.repeat(2 * 1024 * 1024));
    const huge = await curl(t, '/v1/agents/assistant/conversations/big/turns', ['-X', 'POST', '-H', 'Expect: 100-continue', '--data-binary', `@${file}`]);
    expect(huge.status).toBe(413);
    const unauthed = await curl(t, '/v1/agents/assistant/conversations/big/turns', ['-X', 'POST', '-H', 'Expect: 100-continue', '--data-binary', `@${file}`], null);
    expect(unauthed.status).toBe(401);
    const fine = await curl(t, '/v1/agents/assistant/conversations/big/turns', ['-X', 'POST', '-H', 'Expect: 100-continue', '--data-binary', JSON.stringify({ content: 'continued' })]);
    expect(fine.headers).toContain('100 Continue');
    expect(fine.body).toContain('"content":"continued"');
    expect((await turn('assistant', 'big', { content: 'small' })).status).toBe(200);
  });

  it('answers an unknown route 404 and a wrong method 405', async () => {
    const r = await curl(t, '/v1/nothing/here');
    expect(r.status).toBe(404);
    expect(r.json).toEqual({ error: { code: 404, message: 'no route GET /v1/nothing/here' } });
    const m = await curl(t, '/v1/stats', ['-X', 'DELETE']);
    expect(m.status).toBe(405);
    expect(m.headers.toLowerCase()).toContain('allow: get');
  });
});

describe('conversations, search, runs', () => {
  it('lists conversations and finds a stored turn by search', async () => {
    await turn('assistant', 'search-me', { content: 'persimmon quince' });
    const list = await curl(t, '/v1/conversations?sender=search-me');
    expect(list.status).toBe(200);
    expect((list.json as { conversations: { sender: string }[] }).conversations.map((c) => c.sender)).toEqual(['search-me']);
    const hits = await curl(t, '/v1/search?query=persimmon');
    expect(hits.status).toBe(200);
    expect((hits.json as { hits: { sender: string }[] }).hits.map((h) => h.sender)).toContain('search-me');
    const bad = await curl(t, '/v1/search?query=x&limit=-1');
    expect(bad.status).toBe(400);
    const active = await curl(t, '/v1/conversations/active?sender=search-me');
    expect(active.status).toBe(200);
  });

  it('gets and lists runs', async () => {
    const r = (await turn('assistant', 'runs-1', { content: 'a run' })).json as { run_id: string };
    const run = await curl(t, `/v1/runs/${r.run_id}`);
    expect(run.status).toBe(200);
    expect(run.json).toMatchObject({ run_id: r.run_id, agent: 'assistant', sender: 'runs-1', status: 'done' });
    const runs = await curl(t, '/v1/runs?sender=runs-1');
    expect((runs.json as { run_id: string }[] | { runs: { run_id: string }[] })).toBeDefined();
    expect(JSON.stringify(runs.json)).toContain(r.run_id);
    expect((await curl(t, '/v1/runs/not-a-run')).status).toBe(400);
    expect((await curl(t, '/v1/runs/r00000000-0-1')).status).toBe(404);
  });

  it('deletes a conversation', async () => {
    await turn('assistant', 'gone', { content: 'to delete' });
    expect((await curl(t, '/v1/agents/assistant/conversations/gone', ['-X', 'DELETE'])).status).toBe(200);
    expect((await curl(t, '/v1/agents/assistant/conversations/gone/history')).status).toBe(404);
  });
});

describe('agents, models, skills, bus, stats', () => {
  it('creates, reads, updates and deletes an agent', async () => {
    const created = await curlJson(t, 'POST', '/v1/agents', { name: 'helper', config: { description: 'first' } });
    expect(created.status).toBe(200);
    expect(created.json).toMatchObject({ name: 'helper', description: 'first' });
    expect((await curlJson(t, 'POST', '/v1/agents', { name: 'helper', config: {} })).status).toBe(409);
    expect((await curl(t, '/v1/agents/helper')).json).toMatchObject({ name: 'helper', description: 'first' });
    const patched = await curlJson(t, 'PATCH', '/v1/agents/helper', { description: 'second' });
    expect(patched.json).toMatchObject({ name: 'helper', description: 'second' });
    const names = ((await curl(t, '/v1/agents')).json as { agents: { name: string }[] }).agents.map((a) => a.name);
    expect(names).toEqual(expect.arrayContaining(['assistant', 'helper']));
    expect((await curl(t, '/v1/agents/helper', ['-X', 'DELETE'])).status).toBe(200);
    expect((await curl(t, '/v1/agents/helper')).status).toBe(404);
    expect((await curlJson(t, 'POST', '/v1/agents', { name: 'bad name!', config: {} })).status).toBe(400);
  });

  it('lists models and skills', async () => {
    expect((await curl(t, '/v1/models')).status).toBe(200);
    expect((await curl(t, '/v1/skills')).status).toBe(200);
    expect((await curl(t, '/v1/skills/none-such')).status).toBe(404);
  });

  it('publishes on the bus and manages subscriptions', async () => {
    const sub = await curlJson(t, 'POST', '/v1/subscriptions', { source: 'http.test', target_agent: 'assistant' });
    expect(sub.status).toBe(200);
    const id = (sub.json as { id: number }).id;
    const published = await curlJson(t, 'POST', '/v1/events', { source: 'http.test', payload: { n: 1 } });
    expect(published.status).toBe(200);
    expect(published.json).toEqual({ fired: 1 });
    expect(JSON.stringify((await curl(t, '/v1/subscriptions')).json)).toContain('http.test');
    expect((await curl(t, `/v1/subscriptions/${id}`, ['-X', 'DELETE'])).status).toBe(200);
    expect((await curl(t, `/v1/subscriptions/${id}`, ['-X', 'DELETE'])).status).toBe(404);
    expect((await curlJson(t, 'POST', '/v1/events', { payload: 'no source' })).status).toBe(400);
  });

  it('answers stats, counting the HTTP listener', async () => {
    const r = await curl(t, '/v1/stats');
    expect(r.status).toBe(200);
    const stats = r.json as { connections_by_listener: { http: number }; refused_connections: { http: number } };
    expect(stats.connections_by_listener.http).toBeGreaterThanOrEqual(1);
    expect(stats.refused_connections.http).toBe(0);
  });
});

describe('the OpenAPI document', () => {
  it('is served without a token, and is the one generated from the route table', async () => {
    const { buildRouter } = await import('../../src/main/http/start.ts');
    const { openApiDocument } = await import('../../src/main/http/openapi.ts');
    const r = await curl(t, '/v1/openapi.json', [], null);
    expect(r.status).toBe(200);
    expect(r.json).toEqual(openApiDocument(buildRouter()));
  });
});

describe('the listener', () => {
  it('refuses a non-loopback address without a token', async () => {
    const { runAgentd, makeHome } = await import('../helpers/daemon.ts');
    const home = makeHome();
    const r = await runAgentd(['--home', home, '--tcp-insecure', '--tcp', 'off', '--http', '0.0.0.0:0']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('refusing to serve HTTP on 0.0.0.0:0 without a token');
  });

  it('serves loopback without a token when the daemon runs without one', async () => {
    const open = await testDaemon({ args: ['--tcp-insecure', '--http', '127.0.0.1:0'] });
    const { readFileSync } = await import('node:fs');
    const port = Number(readFileSync(`${open.home}/run/http.port`, 'utf8'));
    const t = { base: `http://127.0.0.1:${port}`, token: '' };
    const r = await curl(t, '/v1/ping', [], null);
    expect(r.status).toBe(200);
    // Every request is the admin here, so a web page must not reach it: another site's Origin, or a rebound Host, is refused.
    const body = ['-X', 'POST', '-H', 'content-type: text/plain', '--data-binary', JSON.stringify({ name: 'planted', config: { model: 'echo' } })];
    const crossSite = await curl(t, '/v1/agents', [...body, '-H', 'Origin: https://evil.example'], null);
    expect(crossSite.status).toBe(401);
    expect((crossSite.json as { error: { message: string } }).error.message).toContain('loopback Host');
    expect((await curl(t, '/v1/ping', ['-H', 'Host: rebound.example:80'], null)).status).toBe(401);
    expect((await curl(t, '/v1/events/deploy', ['-X', 'POST', '--data-binary', 'x', '-H', 'Origin: https://evil.example'], null)).status).toBe(401);
    expect((await curl(t, '/v1/ping', ['-H', `Origin: http://localhost:${port}`], null)).status).toBe(200);
    const c = await open.client();
    expect((await c.listAgents()).map((a) => a.name)).not.toContain('planted');
    await c.close();
  });

  it('holds max_connections per listener and answers the next connection 429', async () => {
    const small = await testDaemon({ config: { max_connections: 2 }, args: ['--http', '127.0.0.1:0'] });
    const st = httpTarget(small);
    const { connect } = await import('node:net');
    const url = new URL(st.base);
    // One at a time: a socket counts as unauthenticated until its first request is served (half the slots at most).
    const held: import('node:net').Socket[] = [];
    for (let i = 0; i < 2; i++) {
      held.push(await new Promise<import('node:net').Socket>((resolve) => {
        const s = connect(Number(url.port), url.hostname, () => {
          s.write(`GET /v1/ping HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${st.token}\r\n\r\n`);
          s.once('data', (b) => {
            expect(b.toString()).toMatch(/^HTTP\/1\.1 200/);
            resolve(s);
          });
        });
      }));
    }
    const refused = await curl(st, '/v1/ping');
    expect(refused.status).toBe(429);
    expect((refused.json as { error: { message: string } }).error.message).toContain('max_connections 2');
    for (const s of held) s.destroy();
  });
});
