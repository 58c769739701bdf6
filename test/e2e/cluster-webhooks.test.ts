/**
 * Webhooks in a cluster (PROTOCOL §4.12): two nodes on one NATS and one
 * PostgreSQL database each deliver the events of the turns they run, once;
 * deliveries a node left pending when it was killed (SIGKILL) are delivered
 * by the other. Without NATS or PostgreSQL: fails under CI, skipped
 * elsewhere, saying why.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { AgentdClient } from '../../src/client/index.ts';
import type { WebhookDelivery } from '../../src/shared/wire/webhooks.ts';
import { testClient, testDaemon, waitFor, type Daemon } from '../helpers/daemon.ts';
import { keyOwnedBy, settled as settledOn } from '../helpers/cluster.ts';
import { needPostgres, testDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { NATS_URL, needNats, testClusterName } from '../helpers/nats.ts';

const skip = (await needNats()) ?? (await needPostgres());
const PARTITIONS = 16;
const LEASE_MS = 2_000;

function node(db: TestDatabase, name: string, nodeName: string): Promise<Daemon> {
  return testDaemon({
    config: { agents: { assistant: { model: 'echo' } }, cluster: { name, partitions: PARTITIONS, lease_ms: LEASE_MS }, webhook_backoff_ms: 100 },
    args: ['--store', db.url, '--cluster', NATS_URL, '--node', nodeName],
  });
}

/** A receiver that refuses (503) until `open`, and keeps the delivery id of every request. */
async function receiver(): Promise<{ ids: string[]; contents: string[]; url: string; open(): void }> {
  const got = { ids: [] as string[], contents: [] as string[], opened: false };
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      if (got.opened) {
        got.ids.push(String(req.headers['x-agentd-delivery']));
        got.contents.push((JSON.parse(raw) as { event: { content: string } }).event.content);
      }
      res.statusCode = got.opened ? 200 : 503;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return { ids: got.ids, contents: got.contents, url, open: () => (got.opened = true) };
}

async function deliveries(c: AgentdClient, status: string): Promise<WebhookDelivery[]> {
  return ((await c.request('webhook_deliveries', { name: 'hook', status } as never)).webhook_deliveries as { deliveries: WebhookDelivery[] }).deliveries;
}

describe.skipIf(skip !== null)(`webhooks in a cluster${skip === null ? '' : ` (skipped: ${skip})`}`, () => {
  it('each node delivers its turns once; a killed node\'s pending deliveries go out from the other', async () => {
    const db = await testDatabase();
    const name = testClusterName();
    const a = await node(db, name, 'a');
    const b = await node(db, name, 'b');
    const [ca, cb] = [await testClient(a), await testClient(b)];
    await settledOn([ca, cb], ['a', 'b'], PARTITIONS);
    const rx = await receiver();
    await ca.request('create_webhook', { name: 'hook', url: rx.url, events: ['turn_end'], secret: 'whsec-cluster-0123456789' });
    // Node b learns of the webhook from the store within a second: a turn it runs before that has no delivery.
    await waitFor(async () => {
      const probe = keyOwnedBy('b', ['a', 'b'], PARTITIONS, 'assistant', `probe-${Date.now()}`);
      await cb.send('assistant', 'probe', { sender: probe });
      return (await deliveries(ca, 'pending')).some((d) => d.sender === probe);
    }, 'node b to take webhooks');
    const senders = ['a', 'b', 'a', 'b'].map((owner, i) => keyOwnedBy(owner, ['a', 'b'], PARTITIONS, 'assistant', `s${i}`));
    for (const [i, sender] of senders.entries()) await ca.send('assistant', `turn ${i}`, { sender });
    // Each turn's delivery was written by the node that ran it, and waits while the receiver refuses.
    await waitFor(async () => {
      const pending = await deliveries(ca, 'pending');
      return senders.every((s) => pending.some((d) => d.sender === s && d.attempts > 0 && d.last_error === 'HTTP 503 Service Unavailable'));
    }, 'every turn\'s delivery to be tried and refused');

    // b dies with its deliveries pending (the receiver still refuses); a delivers them once it opens.
    await b.stop('SIGKILL');
    rx.open();
    await waitFor(async () => (await deliveries(ca, 'pending')).length === 0, 'every pending delivery to go out', 60_000);
    const delivered = await deliveries(ca, 'delivered');
    expect(new Set(rx.ids).size).toBe(delivered.length);
    expect(rx.ids.length).toBe(delivered.length);
    for (let i = 0; i < 4; i++) expect(rx.contents.filter((c) => c === `turn ${i}`)).toHaveLength(1);
  }, 240_000);
});
