/**
 * NATS for the cluster tests: the JetStream server AGENTD_TEST_NATS_URL names
 * (default: the development and CI server on 127.0.0.1:4222). Each test uses
 * a key-value bucket of its own, destroyed afterwards. Where no server
 * answers, `needNats()` fails the tests under CI and skips them elsewhere,
 * printing why and how to run them (test/helpers/service-gate.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { onTestFinished } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { skipReason } from './service-gate.ts';

export const NATS_URL = process.env.AGENTD_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';

const HOW_TO_RUN = 'start `nats-server -js` on 127.0.0.1:4222, or set AGENTD_TEST_NATS_URL=nats://host:port (a server with JetStream)';

let probed: Promise<string | null> | undefined;

/** Null when a NATS server with JetStream answers; otherwise why not, and how to run the tests. */
function probeNats(): Promise<string | null> {
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
      return `no NATS server with JetStream answered at ${NATS_URL} (${(err as Error).message}); to run the cluster tests, ${HOW_TO_RUN}`;
    } finally {
      await nc?.close().catch(() => undefined);
    }
  })();
  return probed;
}

/** For a test file that needs NATS: null when it answers; under CI otherwise throws; elsewhere prints and returns why the tests are skipped. */
export async function needNats(): Promise<string | null> {
  return skipReason(await probeNats());
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

/** A cluster name (bucket and subject prefix) of its own for the running test, its bucket destroyed when the test ends. */
export function testClusterName(): string {
  const name = testBucket();
  onTestFinished(() => destroyBucket(name));
  return name;
}

/** The nats-server binary the tests that stop and restart NATS start themselves (Debian package `nats-server`). */
export const NATS_SERVER_BIN = process.env.AGENTD_TEST_NATS_SERVER ?? '/usr/sbin/nats-server';

/** A nats-server with JetStream of the test's own, on a free port, its store in a temporary folder. */
export interface OwnNats {
  url: string;
  /** Stops the server (SIGTERM) and waits for it to exit. */
  stop(): Promise<void>;
  /** Starts it again on the same port and store. */
  restart(): Promise<void>;
  /** Stops it and removes its store. */
  remove(): Promise<void>;
  /** Kills it (SIGKILL), deletes its JetStream store, and starts it again on the same port: NATS that lost its store. */
  loseStore(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** For tests that stop and restart a NATS server of their own: like needNats(), for the NATS_SERVER_BIN they run. */
export function needOwnNats(): string | null {
  return skipReason(existsSync(NATS_SERVER_BIN)
    ? null
    : `no ${NATS_SERVER_BIN} (the tests that restart NATS run one); to run them, install the Debian package nats-server or set AGENTD_TEST_NATS_SERVER to a nats-server binary`);
}

export async function startOwnNats(): Promise<OwnNats> {
  const dir = await mkdtemp(path.join(tmpdir(), 'agentd-nats-'));
  const port = await freePort();
  const url = `nats://127.0.0.1:${port}`;
  let proc: ChildProcess | null = null;
  const start = async (): Promise<void> => {
    proc = spawn(NATS_SERVER_BIN, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir], { stdio: 'ignore' });
    const until = Date.now() + 20_000;
    for (;;) {
      try {
        const nc = await connect({ servers: url, reconnect: false, timeout: 1_000 });
        await nc.close();
        return;
      } catch (err) {
        if (Date.now() > until) throw new Error(`nats-server on port ${port} did not start: ${(err as Error).message}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  const stop = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<void> => {
    const p = proc;
    proc = null;
    if (p === null || p.exitCode !== null) return;
    const exited = new Promise((resolve) => p.once('exit', resolve));
    p.kill(signal);
    await exited;
  };
  await start();
  return {
    url,
    stop,
    restart: start,
    remove: async () => {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
    loseStore: async () => {
      await stop('SIGKILL');
      await rm(dir, { recursive: true, force: true });
      await mkdir(dir);
      await start();
    },
  };
}
