/**
 * Inbound webhooks: POST /v1/events/{source} publishes the body on the bus,
 * let in by the home's token or by an HMAC-SHA256 signature under the
 * source's secret (http_event_sources); a subscription fires a turn.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, startDaemon, waitFor } from '../helpers/daemon.ts';
import { httpParts, type HttpDaemon } from '../helpers/http-daemon.ts';

const SECRET = 'deploy-secret-0123';
let h: HttpDaemon;

beforeAll(async () => {
  h = httpParts(await startDaemon({
    config: { agents: { assistant: { model: 'echo' } }, http_event_sources: { deploy: { secret: SECRET } } },
    args: ['--http', '127.0.0.1:0'],
  }));
  const c = await h.daemon.client();
  for (const source of ['deploy', 'plain']) await c.request('subscribe_event', { source, target_agent: 'assistant' });
  await c.close();
});
afterAll(() => cleanup(h.daemon));

const sign = (body: string, secret = SECRET): string => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

function post(source: string, body: string, headers: Record<string, string>): Promise<Response> {
  return fetch(`${h.base}/v1/events/${source}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
}

async function userMessages(source: string): Promise<string[]> {
  const c = await h.daemon.client();
  try {
    const r = await c.request('get_conversation_history', { agent: 'assistant', sender: `event:${source}` }).catch((e: { code?: number }) => {
      if (e.code === 404) return { conversation_history: { messages: [] } };
      throw e;
    });
    return (r.conversation_history as { messages: { role: string; content: string }[] }).messages.filter((m) => m.role === 'user').map((m) => m.content);
  } finally {
    await c.close();
  }
}

describe('inbound webhooks', () => {
  it('a body signed with the source\'s secret is published as it came, and its subscription fires a turn; a bad signature is 401 and publishes nothing', async () => {
    const forged = '{"version":"forged"}';
    const bad = await post('deploy', forged, { 'x-agentd-signature': sign(forged, 'not-the-secret') });
    expect(bad.status).toBe(401);
    expect(await bad.json()).toMatchObject({ error: { code: 401, message: expect.stringContaining('bad signature') } });
    const malformed = await post('deploy', forged, { 'x-agentd-signature': 'sha256=zz' });
    expect(malformed.status).toBe(401);

    const body = '{ "version": "1.2" }';
    const ok = await post('deploy', body, { 'x-agentd-signature': sign(body) });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ fired: 1 });
    await waitFor(async () => (await userMessages('deploy')).length > 0, 'the fired turn');
    expect(await userMessages('deploy')).toEqual([body]);

    const github = await post('deploy', 'second', { 'x-hub-signature-256': sign('second') });
    expect(await github.json()).toEqual({ fired: 1 });
    await waitFor(async () => (await userMessages('deploy')).length === 2, 'the second fired turn');
    expect(await userMessages('deploy')).toEqual([body, 'second']);
  });

  it('the home token lets any source in; neither token nor signature, a wrong token, or a signature for a source with no secret is 401', async () => {
    expect((await post('plain', 'no auth', {})).status).toBe(401);
    expect((await post('plain', 'wrong', { authorization: 'Bearer nope' })).status).toBe(401);
    expect((await post('plain', 'signed', { 'x-agentd-signature': sign('signed') })).status).toBe(401);
    const ok = await post('plain', 'with the token', { authorization: `Bearer ${h.token}` });
    expect(await ok.json()).toEqual({ fired: 1 });
    await waitFor(async () => (await userMessages('plain')).length > 0, 'the fired turn');
    expect(await userMessages('plain')).toEqual(['with the token']);
  });

  it('a scoped token must be one that may publish: read or a bound chat token gets 403 and publishes nothing', async () => {
    const c = await h.daemon.client();
    const read = await c.createToken({ scopes: ['read'] });
    const bound = await c.createToken({ scopes: ['chat'], agents: ['assistant'], sender: 'alice' });
    const chat = await c.createToken({ scopes: ['chat'] });
    await c.close();
    for (const t of [read, bound]) {
      const r = await post('guarded', 'not from you', { authorization: `Bearer ${t.token}` });
      expect(r.status).toBe(403);
      expect(((await r.json()) as { error: { message: string } }).error.message).toMatch(/scope|bound/);
    }
    expect(await (await post('guarded', 'from a chat token', { authorization: `Bearer ${chat.token}` })).json()).toEqual({ fired: 0 });
  });

  it('a source nobody subscribes to fires nothing', async () => {
    const body = 'unheard';
    expect(await (await post('nobody-listens', body, { authorization: `Bearer ${h.token}` })).json()).toEqual({ fired: 0 });
  });
});
