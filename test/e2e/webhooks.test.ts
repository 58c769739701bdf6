/** Outbound webhooks (PROTOCOL §4.12): signed deliveries to a real HTTP receiver, retries, a durable outbox. */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { AgentdClient } from '../../src/client/index.ts';
import type { WebhookDelivery, WebhookInfo } from '../../src/shared/wire/webhooks.ts';
import { cleanup, makeHome, startDaemon, testClient, testDaemon, waitFor, type Daemon } from '../helpers/daemon.ts';

const SECRET = 'whsec-0123456789abcdef';
/** Short retry delays: the backoff is a setting, so the test never sleeps. */
const CONFIG = { agents: { assistant: { model: 'echo' }, other: { model: 'echo' } }, webhook_backoff_ms: 50 };

interface Received {
  id: string;
  signature: string;
  raw: string;
  body: { agent: string; sender: string; kind: string; event: { kind: string; content: string }; timestamp: string };
}

/** A webhook receiver: answers each request with `status()` (200 unless told otherwise) and keeps what it got. */
class Receiver {
  readonly got: Received[] = [];
  status: (req: Received) => number = () => 200;
  #server: Server | null = null;
  port = 0;

  async up(port = 0): Promise<void> {
    const server = createServer((req: IncomingMessage, res) => {
      let raw = '';
      req.on('data', (d: Buffer) => (raw += d.toString()));
      req.on('end', () => {
        const r: Received = { id: String(req.headers['x-agentd-delivery']), signature: String(req.headers['x-agentd-signature']), raw, body: JSON.parse(raw) as Received['body'] };
        this.got.push(r);
        res.statusCode = this.status(r);
        res.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    this.#server = server;
    this.port = (server.address() as AddressInfo).port;
    onTestFinished(() => this.down());
  }

  async down(): Promise<void> {
    const s = this.#server;
    this.#server = null;
    if (s !== null) await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  /** Delivery ids, each counted once however often it came (the receiver's idempotency). */
  ids(): string[] {
    return [...new Set(this.got.map((r) => r.id))];
  }
}

/** How a receiver verifies a delivery: recompute the HMAC of "<t>.<body>" and compare in constant time. */
function verifies(r: Received, secret: string): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(r.signature);
  if (m === null) return false;
  const expected = createHmac('sha256', secret).update(`${m[1]}.${r.raw}`).digest();
  return timingSafeEqual(expected, Buffer.from(m[2]!, 'hex')) && Math.abs(Date.now() / 1000 - Number(m[1])) < 300;
}

async function deliveries(c: AgentdClient, name: string, status?: string): Promise<WebhookDelivery[]> {
  return ((await c.request('webhook_deliveries', { name, ...(status === undefined ? {} : { status }) } as never)).webhook_deliveries as { deliveries: WebhookDelivery[] }).deliveries;
}

async function createHook(c: AgentdClient, args: Record<string, unknown>): Promise<WebhookInfo> {
  return (await c.request('create_webhook', { secret: SECRET, events: ['turn_end'], ...args } as never)).webhook as WebhookInfo;
}

describe('webhooks', () => {
  it('posts signed, verifiable turn_end deliveries for the agents it names', async () => {
    const rx = new Receiver();
    await rx.up();
    const d = await testDaemon({ config: CONFIG });
    const c = await testClient(d);
    const hook = await createHook(c, { name: 'ends', url: rx.url, agents: ['assistant'] });
    expect(hook).toEqual({ name: 'ends', url: rx.url, events: ['turn_end'], agents: ['assistant'], max_attempts: 8, created_at: expect.any(String), dropped: 0 });
    await c.send('assistant', 'hello there', { sender: 'alice' });
    await c.send('other', 'not for this webhook', { sender: 'alice' });
    await c.send('assistant', 'second turn', { sender: 'alice' });
    await waitFor(async () => (await deliveries(c, 'ends', 'delivered')).length === 2, 'two deliveries');
    expect(rx.got.map((r) => r.body.event.content)).toEqual(['hello there', 'second turn']);
    for (const r of rx.got) {
      expect(verifies(r, SECRET)).toBe(true);
      expect(verifies(r, 'another-secret-of-16')).toBe(false);
      expect(r.body).toMatchObject({ agent: 'assistant', sender: 'alice', kind: 'turn_end', event: { kind: 'done', agent: 'assistant', sender: 'alice' } });
      expect(r.body.timestamp).toBe((r.body.event as unknown as { timestamp: string }).timestamp);
    }
    const listed = JSON.stringify(await c.request('list_webhooks', {}));
    expect(listed).not.toContain(SECRET);
    expect(d.stderr()).not.toContain(SECRET);
  });

  it('retries 5xx with the same delivery id, does not retry other 4xx', async () => {
    const rx = new Receiver();
    await rx.up();
    let calls = 0;
    rx.status = (r) => (r.body.event.content === 'refused' ? 400 : ++calls <= 2 ? 503 : 200);
    const d = await testDaemon({ config: CONFIG });
    const c = await testClient(d);
    await createHook(c, { name: 'flaky', url: rx.url });
    await c.send('assistant', 'retried', { sender: 'bob' });
    await waitFor(async () => (await deliveries(c, 'flaky', 'delivered')).length === 1, 'the retried delivery');
    expect(rx.got).toHaveLength(3);
    expect(new Set(rx.got.map((r) => r.id)).size).toBe(1);
    const [delivered] = await deliveries(c, 'flaky');
    expect(delivered).toMatchObject({ status: 'delivered', attempts: 3, last_error: 'HTTP 503 Service Unavailable', kind: 'turn_end', agent: 'assistant', sender: 'bob' });

    await c.send('assistant', 'refused', { sender: 'bob' });
    await waitFor(async () => (await deliveries(c, 'flaky', 'failed')).length === 1, 'the refused delivery to fail');
    expect((await deliveries(c, 'flaky', 'failed'))[0]).toMatchObject({ attempts: 1, last_error: 'HTTP 400 Bad Request', next_attempt_at: null });
    expect(rx.got.filter((r) => r.body.event.content === 'refused')).toHaveLength(1);
  });

  it('a receiver down across a daemon restart gets every delivery once up, in order per conversation', async () => {
    const rx = new Receiver();
    await rx.up();
    const port = rx.port;
    await rx.down();
    const home = makeHome(CONFIG);
    let d: Daemon = await startDaemon({ home });
    let c = await testClient(d);
    await createHook(c, { name: 'later', url: `http://127.0.0.1:${port}/hook` });
    for (const [i, sender] of ['carol', 'dave', 'carol', 'dave', 'carol'].entries()) await c.send('assistant', `turn ${i}`, { sender });
    await waitFor(async () => {
      const pending = await deliveries(c, 'later', 'pending');
      return pending.length === 5 && pending.some((p) => p.attempts > 0 && p.last_error.startsWith('connection error'));
    }, 'attempts to fail while the receiver is down');
    await d.stop();
    d = await startDaemon({ home });
    try {
      c = await testClient(d);
      await rx.up(port);
      await waitFor(async () => (await deliveries(c, 'later', 'delivered')).length === 5, 'every delivery after the restart', 30_000);
      expect(rx.ids()).toHaveLength(5);
      for (const sender of ['carol', 'dave']) {
        const order = rx.got.filter((r) => r.body.sender === sender).map((r) => r.body.event.content);
        expect([...new Set(order)]).toEqual(sender === 'carol' ? ['turn 0', 'turn 2', 'turn 4'] : ['turn 1', 'turn 3']);
      }
      expect(rx.got.every((r) => verifies(r, SECRET))).toBe(true);
    } finally {
      await cleanup(d);
    }
  }, 90_000);

  it('refuses bad webhooks clearly; counts what a full outbox drops', async () => {
    const d = await testDaemon({ config: { ...CONFIG, max_webhooks: 2, max_webhook_outbox: 1, webhook_hosts: ['127.0.0.1', '*.example.com'], webhook_backoff_ms: 3_600_000 } });
    const c = await testClient(d);
    const refused = async (args: Record<string, unknown>, code: number, message: RegExp): Promise<void> => {
      const r = createHook(c, { name: 'w', url: 'http://127.0.0.1:9/hook', ...args });
      await expect(r).rejects.toMatchObject({ code });
      await expect(r).rejects.toThrow(message);
    };
    await refused({ url: 'ftp://127.0.0.1/x' }, 400, /create_webhook.url must be http:\/\/ or https:\/\/, got ftp:/);
    await refused({ url: 'not a url' }, 400, /create_webhook.url is not a URL/);
    await refused({ url: 'http://user:pw@127.0.0.1/x' }, 400, /must not hold credentials/);
    await refused({ url: 'https://evil.test/x' }, 400, /url host "evil.test" is not allowed by the daemon's webhook_hosts setting/);
    await refused({ events: ['turn_end', 'explode'] }, 400, /"explode" is not an event kind; the kinds are turn_end, approval_required/);
    await refused({ events: [] }, 400, /create_webhook.events must list at least one of/);
    await refused({ secret: 'short' }, 400, /create_webhook.secret must be 16 to 1024 characters, got 5/);
    await refused({ max_attempts: 0 }, 400, /create_webhook.max_attempts must be from 1 to 100/);
    await createHook(c, { name: 'w', url: 'https://hooks.example.com/x', events: ['turn_end', 'approval_required'] });
    await refused({}, 409, /webhook "w" already exists/);
    await createHook(c, { name: 'x', url: 'http://127.0.0.1:9/hook' });
    await refused({ name: 'y' }, 429, /too many webhooks: the limit is 2 \(config key max_webhooks\)/);
    await expect(c.request('delete_webhook', { name: 'nope' })).rejects.toMatchObject({ code: 404 });
    await expect(c.request('webhook_deliveries', { name: 'nope' })).rejects.toThrow(/no webhook "nope"/);

    // Port 9 refuses: deliveries stay pending, and the one-slot outbox drops the rest, counted per webhook.
    await c.request('delete_webhook', { name: 'w' });
    await c.send('assistant', 'one', { sender: 'erin' });
    await c.send('assistant', 'two', { sender: 'erin' });
    await waitFor(async () => ((await c.request('list_webhooks', {})).webhook_list as { webhooks: WebhookInfo[] }).webhooks[0]!.dropped === 1, 'the second event to be dropped');
    expect(await deliveries(c, 'x')).toHaveLength(1);
  });
});

describe('webhooks on runs', () => {
  it('deliver approval_required when a run waits, and turn_end with how the turn ended', async () => {
    const rx = new Receiver();
    await rx.up();
    const d = await testDaemon({ config: { ...CONFIG, agents: { guarded: { model: 'echo', approve_tools: ['peers'] } } } });
    const c = await testClient(d);
    await createHook(c, { name: 'runs', url: rx.url, events: ['approval_required', 'turn_end'] });
    const it = c.stream('guarded', '/call peers {}', { sender: 'carol' })[Symbol.asyncIterator]();
    let runId = '';
    let callId = '';
    for (let r = await it.next(); !r.done; r = await it.next()) {
      if (r.value.type === 'start') runId = r.value.run_id ?? '';
      if (r.value.type === 'approval_required') {
        callId = r.value.call_id;
        break;
      }
    }
    await waitFor(() => rx.got.some((r) => r.body.kind === 'approval_required'), 'the approval_required delivery');
    const asked = rx.got.find((r) => r.body.kind === 'approval_required')!.body.event as unknown as Record<string, unknown>;
    expect(asked).toMatchObject({ kind: 'waiting', agent: 'guarded', sender: 'carol', run_id: runId, tool_calls: [{ id: callId, name: 'peers' }] });
    await c.approveTool(runId, callId, true);
    for (let r = await it.next(); !r.done; r = await it.next());
    await waitFor(() => rx.got.some((r) => r.body.kind === 'turn_end'), 'the turn_end delivery');
    const ended = rx.got.find((r) => r.body.kind === 'turn_end')!.body.event as unknown as Record<string, unknown>;
    expect(ended).toMatchObject({ kind: 'done', run_id: runId, stop_reason: 'text' });
    expect(ended.error).toBeUndefined();
    for (const r of rx.got) expect(verifies(r, SECRET)).toBe(true);
  });
});
