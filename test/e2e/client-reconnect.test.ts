/**
 * The client's reconnect and retry against real daemons: a `reconnect`
 * client connects again on the call after a loss (the daemon restarted on
 * its home), and `send` with `retry` tries again under the same turn_id, so
 * a turn that ran on after its connection was cut is replayed, not run twice.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { AgentdClient, CONNECTION_CLOSED, ConnectionClosedError, type ConnectOptions, type RetryFailure } from '../../src/client/index.ts';
import { proxy, type Proxy } from '../helpers/socket-proxy.ts';
import { cleanup, startDaemon, testClient, testDaemon, waitRunning, type Daemon } from '../helpers/daemon.ts';

/** Tests that start a daemon twice: each start may take 45 s on a loaded machine (test/helpers/daemon.ts). */
const TWO_STARTS_MS = 180_000;

const CONFIG = { agents: { assistant: { model: 'echo' }, slow: { model: 'echo', echo: { delay_ms: 400 } } } };

let shared: Daemon;
beforeAll(async () => {
  shared = await startDaemon({ config: CONFIG });
});
afterAll(() => cleanup(shared));

/** A client of the shared daemon through a proxy of its own. */
async function proxiedClient(opts: Partial<ConnectOptions> = {}): Promise<{ c: AgentdClient; through: Proxy }> {
  const through = await proxy(shared.socketPath, shared.home);
  const c = await AgentdClient.connect({ path: through.path, ...opts });
  onTestFinished(() => c.close());
  return { c, through };
}

/** A second daemon on `d`'s home (same socket path and storage), cleaned up after the test. */
async function restart(d: Daemon): Promise<Daemon> {
  await d.stop();
  const again = await startDaemon({ home: d.home });
  onTestFinished(() => cleanup(again));
  return again;
}

async function reconnectingClient(d: Daemon): Promise<AgentdClient> {
  const c = await AgentdClient.connect({ path: d.socketPath, reconnect: true });
  onTestFinished(() => c.close());
  return c;
}

describe('reconnect', () => {
  it('the call after a lost connection connects again; open requests fail; close() ends it', async () => {
    const d = await testDaemon({ config: CONFIG });
    const c = await reconnectingClient(d);
    await c.ping();
    await d.stop();
    await expect(c.ping()).rejects.toMatchObject({ name: 'ConnectionClosedError', code: CONNECTION_CLOSED });
    expect(c.isClosed).toBe(false);
    await restart(d);
    expect((await c.send('assistant', 'back again')).content).toBe('back again');
    await c.close();
    expect(c.isClosed).toBe(true);
    expect(await c.closed()).toBeUndefined();
    await expect(c.ping()).rejects.toBeInstanceOf(ConnectionClosedError);
  }, TWO_STARTS_MS);

  it('a client without reconnect stays closed after a loss, and send does not retry it', async () => {
    const { c, through } = await proxiedClient();
    through.cut();
    await c.closed();
    const seen: RetryFailure[] = [];
    await expect(c.send('assistant', 'x', { retry: { initialDelayMs: 0, onRetry: (f) => void seen.push(f) } })).rejects.toBeInstanceOf(ConnectionClosedError);
    expect(seen).toEqual([]);
    expect(c.isClosed).toBe(true);
  });
});

describe('send with retry', () => {
  it('replays a turn whose connection was cut while it ran: same turn_id, one turn stored', async () => {
    const { c, through } = await proxiedClient({ reconnect: true });
    const watcher = await testClient(shared);
    const seen: RetryFailure[] = [];
    const reply = c.send('slow', 'one two three four', { sender: 'cut', turn_id: 'cut-1', retry: { initialDelayMs: 0, onRetry: (f) => void seen.push(f) } });
    await waitRunning(watcher, 'slow', 'cut');
    through.cut();
    expect(await reply).toMatchObject({ content: 'one two three four', replayed: true });
    expect(seen.map((f) => [f.attempt, f.error.name])).toEqual([[1, 'ConnectionClosedError']]);
    const history = await watcher.history('slow', 'cut');
    expect(history.messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'one two three four'],
      ['assistant', 'one two three four'],
    ]);
  });

  it('retries through a daemon restart, with the turn_id it made, and runs the turn once', async () => {
    const d = await testDaemon({ config: CONFIG });
    const c = await reconnectingClient(d);
    await d.stop();
    let again: Daemon | undefined;
    const seen: RetryFailure[] = [];
    const onRetry = async (f: RetryFailure): Promise<void> => {
      seen.push(f);
      again = await restart(d); // what an operator's restart would do, as a barrier instead of a wait
    };
    const reply = await c.send('assistant', 'after a restart', { sender: 'restart', retry: { attempts: 2, initialDelayMs: 0, onRetry } });
    expect(reply.content).toBe('after a restart');
    expect(reply.replayed).toBeUndefined();
    expect(seen.map((f) => [f.attempt, f.error.name])).toEqual([[1, 'ConnectionClosedError']]);
    const check = await testClient(again!);
    expect((await check.history('assistant', 'restart')).messages).toHaveLength(2);
    // The same turn_id again is answered from storage.
    expect(await c.send('assistant', 'after a restart', { sender: 'restart', turn_id: 'fixed', retry: { attempts: 1 } })).not.toHaveProperty('replayed');
    expect(await c.send('assistant', 'after a restart', { sender: 'restart', turn_id: 'fixed' })).toMatchObject({ replayed: true });
  }, TWO_STARTS_MS);

  it("gives up after the client's attempts, waiting longer each time", async () => {
    const seen: RetryFailure[] = [];
    const retry = { attempts: 3, initialDelayMs: 1, jitter: false, onRetry: (f: RetryFailure) => void seen.push(f) };
    const { c, through } = await proxiedClient({ reconnect: true, retry });
    await through.stop();
    const failed = await c.send('assistant', 'nobody home').catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(ConnectionClosedError);
    expect((failed as Error).message).toMatch(/^cannot connect to agentd at /);
    expect(seen.map((f) => [f.attempt, f.delayMs])).toEqual([
      [1, 1],
      [2, 2],
    ]);
  });

  it('refuses bad retry options at connect and at send', async () => {
    await expect(AgentdClient.connect({ path: shared.socketPath, retry: { attempts: -1 } })).rejects.toThrow('retry.attempts must be an integer of at least 1, got -1');
    const c = await testClient(shared);
    await expect(c.send('assistant', 'x', { retry: { maxDelayMs: 1.5 } })).rejects.toThrow('retry.maxDelayMs must be an integer of at least 0, got 1.5');
  });
});
