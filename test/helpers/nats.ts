/**
 * NATS for the cluster tests: the JetStream server AGENTD_TEST_NATS_URL names
 * (default: the development and CI server on 127.0.0.1:4222). Each test uses
 * a key-value bucket of its own, destroyed afterwards. Where no server
 * answers, `natsUnavailable()` says why and how to run the tests, and they
 * skip themselves with that line printed.
 */
import { randomBytes } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';

export const NATS_URL = process.env.AGENTD_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';

const HOW_TO_RUN = 'start `nats-server -js` on 127.0.0.1:4222, or set AGENTD_TEST_NATS_URL=nats://host:port (a server with JetStream)';

let probed: Promise<string | null> | undefined;

/** Null when a NATS server with JetStream answers; otherwise why the cluster tests are skipped, and how to run them. */
export function natsUnavailable(): Promise<string | null> {
  probed ??= (async () => {
    let nc: NatsConnection | undefined;
    try {
      nc = await connect({ servers: NATS_URL, timeout: 5_000, reconnect: false });
      const kvm = new Kvm(nc);
      const probe = `agentd_probe_${randomBytes(4).toString('hex')}`;
      const kv = await kvm.create(probe, { history: 1 });
      await kv.destroy();
      return null;
    } catch (err) {
      return `cluster tests skipped: no NATS server with JetStream answered at ${NATS_URL} (${(err as Error).message}); to run them, ${HOW_TO_RUN}`;
    } finally {
      await nc?.close().catch(() => undefined);
    }
  })();
  return probed;
}

/** A connection of its own (a node's): closing it cuts that node off from NATS. */
export function natsConnection(): Promise<NatsConnection> {
  return connect({ servers: NATS_URL, reconnect: false });
}

/** A bucket name no other test uses. */
export function testBucket(): string {
  return `agentd_t_${randomBytes(6).toString('hex')}`;
}

/** Destroys a test's bucket, if the test created it. */
export async function destroyBucket(name: string): Promise<void> {
  const nc = await natsConnection();
  try {
    const streams = await jetstreamManager(nc);
    if (await streams.streams.info(`KV_${name}`).then(() => true, () => false)) await streams.streams.delete(`KV_${name}`);
  } finally {
    await nc.close();
  }
}
