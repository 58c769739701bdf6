/**
 * Starts a real agentd process on a fresh $AGENTD_HOME (after nats `nst`):
 * waits for its ready line, racing an early exit, then confirms `ping`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { onTestFinished } from 'vitest';
import { AgentdClient, type ConnectOptions, type StreamEvent } from '../../src/client/index.ts';
import { createTestDatabase, type TestDatabase } from './postgres.ts';

const ROOT = resolve(import.meta.dirname, '../..');
/** The launcher users run (bin/agentd: the daemon under its malloc settings), so tests see what they see. */
const AGENTD = join(ROOT, 'bin', 'agentd');

export interface DaemonOptions {
  workers?: number;
  /** Written to $AGENTD_HOME/agentd.json. */
  config?: Record<string, unknown>;
  env?: Record<string, string>;
  /** Reuse a home (restart tests); a new temp dir otherwise. */
  home?: string;
  /** Extra flags; `--tcp 127.0.0.1:0` is added unless one is given. */
  args?: string[];
}

export interface Daemon {
  home: string;
  socketPath: string;
  port: number | null;
  proc: ChildProcess;
  /** Everything the daemon wrote to stderr so far. */
  stderr(): string;
  client(opts?: Partial<ConnectOptions>): Promise<AgentdClient>;
  tcpClient(opts?: Partial<ConnectOptions>): Promise<AgentdClient>;
  /** SIGTERM (or `signal`) and wait for exit. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function makeHome(config?: Record<string, unknown>): string {
  const home = mkdtempSync(join(tmpdir(), 'agentd-test-'));
  if (config !== undefined) writeFileSync(join(home, 'agentd.json'), JSON.stringify(config));
  return home;
}

/** Runs agentd to completion (for start-up failures); returns its exit and output. */
export function runAgentd(args: string[], env: Record<string, string> = {}, timeoutMs = READY_MS): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolvePromise) => {
    const proc = spawn(AGENTD, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

/**
 * The store the tests' daemons use: `sqlite` (the default, in each home) or
 * `postgres` (AGENTD_TEST_STORE=postgres: the vitest project "postgres" runs
 * the storage suites so), a database of its own per home.
 */
export const TEST_STORE = process.env.AGENTD_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';

/** Per home, so a restart on the same home finds its conversations again. */
const homeDatabases = new Map<string, TestDatabase>();

/** `--store URL` for a daemon on a PostgreSQL test store; nothing for SQLite or when the test names its own store. */
async function storeArgs(home: string, args: readonly string[]): Promise<string[]> {
  if (TEST_STORE !== 'postgres' || args.includes('--store')) return [];
  let db = homeDatabases.get(home);
  if (db === undefined) homeDatabases.set(home, (db = await createTestDatabase()));
  return ['--store', db.url];
}

/**
 * How long a daemon may take to say it is ready. Alone it takes about 1.3 s; under the full suite on a loaded
 * 2-core machine a start took over 20 s (CI, harness-security), so this is generous.
 */
const READY_MS = 45_000;

export async function startDaemon(opts: DaemonOptions = {}): Promise<Daemon> {
  const home = opts.home ?? makeHome(opts.config);
  if (opts.home !== undefined && opts.config !== undefined) writeFileSync(join(home, 'agentd.json'), JSON.stringify(opts.config));
  const args = ['--home', home, '--workers', String(opts.workers ?? 2), ...(opts.args ?? [])];
  args.push(...(await storeArgs(home, args)));
  if (!args.includes('--tcp')) args.push('--tcp', '127.0.0.1:0');
  const proc = spawn(AGENTD, args, {
    env: { ...process.env, AGENTD_HOME: home, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => proc.on('exit', (code, signal) => r({ code, signal })));

  await new Promise<void>((resolveReady, reject) => {
    const deadline = setTimeout(() => {
      proc.kill('SIGKILL'); // a daemon that missed its start must not outlive the test (leaked ones load the machine)
      reject(new Error(`agentd did not become ready in ${READY_MS / 1000} s\n${stderr}`));
    }, READY_MS);
    proc.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (stdout.includes(' ready: ')) {
        clearTimeout(deadline);
        resolveReady();
      }
    });
    void exited.then(({ code }) => {
      clearTimeout(deadline);
      reject(new Error(`agentd exited with ${code} before ready\n${stderr}`));
    });
  });

  const socketPath = join(home, 'run', 'agentd.sock');
  let port: number | null = null;
  try {
    port = Number(readFileSync(join(home, 'run', 'agentd.port'), 'utf8').trim());
  } catch {
    port = null;
  }
  const d: Daemon = {
    home,
    socketPath,
    port,
    proc,
    stderr: () => stderr,
    client: (o = {}) => AgentdClient.connect({ path: socketPath, ...o }),
    // `home` lets the client read the token file the daemon made; an explicit `token` wins.
    tcpClient: (o = {}) => AgentdClient.connect({ host: '127.0.0.1', port: port!, home, ...o }),
    exited,
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
  const c = await d.client();
  await c.ping();
  await c.close();
  return d;
}

/** Stops the daemon and removes its home (and its PostgreSQL test database). */
export async function cleanup(d: Daemon): Promise<void> {
  await d.stop('SIGKILL').catch(() => {});
  rmSync(d.home, { recursive: true, force: true });
  const db = homeDatabases.get(d.home);
  homeDatabases.delete(d.home);
  await db?.drop();
}

/** Collects a stream's events. */
export async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

/** Polls `check` until it returns true, under a deadline (no fixed sleeps in tests). */
export async function waitFor(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A daemon for the current test: stopped, and its home removed, when the test ends. */
export async function testDaemon(opts: DaemonOptions = {}): Promise<Daemon> {
  const d = await startDaemon(opts);
  onTestFinished(() => cleanup(d));
  return d;
}

/** A client of `d` for the current test, closed when the test ends. */
export async function testClient(d: Daemon, opts: Partial<ConnectOptions> = {}): Promise<AgentdClient> {
  const c = await d.client(opts);
  onTestFinished(() => c.close());
  return c;
}

/** Waits until the pair has a turn running (seen through list_active_conversations). */
export async function waitRunning(c: AgentdClient, agent: string, sender: string): Promise<void> {
  await waitFor(async () => {
    const r = await c.request('list_active_conversations', { agent, sender });
    return (r.active_conversations as { conversations: { running: boolean }[] }).conversations[0]?.running === true;
  }, `a running turn of ${agent}/${sender}`);
}

/** Streams a turn on `c` and kills its pair through `killer` once the first chunk arrives; returns every event. */
export async function streamKilledAtFirstChunk(c: AgentdClient, killer: AgentdClient, agent: string, content: string, sender: string): Promise<StreamEvent[]> {
  const evs: StreamEvent[] = [];
  let killed = false;
  for await (const ev of c.stream(agent, content, { sender })) {
    evs.push(ev);
    if (ev.type === 'chunk' && !killed) {
      killed = true;
      await killer.kill(agent, sender);
    }
  }
  return evs;
}

/** The contents of a conversation's stored messages, in order, read over a client of its own. */
export async function historyContents(d: Daemon, agent: string, sender: string): Promise<string[]> {
  const c = await d.client();
  try {
    return (await c.history(agent, sender)).messages.map((m) => m.content);
  } finally {
    await c.close();
  }
}
