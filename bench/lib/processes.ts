/** Starts the systems under test as separate processes and waits until each is ready. */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createServer } from 'node:net';

const ROOT = resolve(import.meta.dirname, '../..');

/** Every process a bench started and not yet seen exit, so a run can end them when a suite is abandoned. */
const live = new Set<ChildProcess>();

function track<P extends ChildProcess>(proc: P): P {
  live.add(proc);
  proc.once('exit', () => live.delete(proc));
  return proc;
}

/** The processes running now. */
export function runningProcesses(): Set<ChildProcess> {
  return new Set(live);
}

/** Ends (SIGTERM) every process started since `before` and still running: those of a suite abandoned past its time cap. */
export function stopStartedSince(before: Set<ChildProcess>): number {
  const started = [...live].filter((p) => !before.has(p));
  for (const proc of started) proc.kill('SIGTERM');
  return started.length;
}

export interface Proc {
  unix: string;
  tcp: { host: string; port: number } | null;
  proc: ChildProcess;
  stop(): Promise<void>;
}

function waitForLine(proc: ChildProcess, pattern: RegExp, what: string, timeoutMs = 30_000): Promise<RegExpMatchArray> {
  return new Promise((resolvePromise, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`${what} not ready in ${timeoutMs} ms\n${err}`)), timeoutMs);
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = pattern.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        resolvePromise(m);
      }
    });
    proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited with ${code}\n${err}`));
    });
  });
}

function stopper(proc: ChildProcess, cleanup: () => void): () => Promise<void> {
  return async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
    }
    cleanup();
  };
}

/** How a bench daemon starts besides its config. */
export interface AgentdStart {
  /** Runs first, to prepare data in the home. */
  seed?: (home: string) => void;
  nodeArgs?: string[];
  /** The checkout whose dist/ runs (another commit's, for a before/after run). */
  root?: string;
  /**
   * `agentd` (the default): under bin/malloc-defaults.sh, as bin/agentd and `npm start` run it; this
   * checkout's copy, so a before/after run compares code, not settings. `glibc`: glibc's own defaults.
   */
  malloc?: 'agentd' | 'glibc';
}

/** `env` less GLIBC_TUNABLES and the MALLOC_* variables, so a daemon runs under the malloc settings a bench chose. */
export function withoutMallocSettings(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out = { ...env };
  for (const name of ['GLIBC_TUNABLES', 'MALLOC_ARENA_MAX', 'MALLOC_MMAP_THRESHOLD_']) delete out[name];
  return out;
}

/** Starts the built daemon on a fresh home. */
export async function startAgentd(
  workers: number,
  agents: Record<string, unknown>,
  extra: Record<string, unknown> = {},
  { seed, nodeArgs = [], root = ROOT, malloc = 'agentd' }: AgentdStart = {},
): Promise<Proc> {
  const home = mkdtempSync(join(tmpdir(), 'agentd-bench-'));
  writeFileSync(join(home, 'agentd.json'), JSON.stringify({ agents, ...extra }));
  seed?.(home);
  // The built daemon, as production runs it (`npm run bench` builds first).
  const nodeArgv = [...nodeArgs, join(root, 'dist/src/cli/agentd.js'), '--home', home, '--workers', String(workers), '--tcp', '127.0.0.1:0', '--tcp-insecure'];
  const options = { env: withoutMallocSettings(process.env), stdio: ['ignore', 'pipe', 'pipe'] } satisfies SpawnOptions;
  const proc = track(malloc === 'glibc'
    ? spawn(process.execPath, nodeArgv, options)
    : spawn('sh', ['-c', '. "$0" && exec "$@"', join(ROOT, 'bin', 'malloc-defaults.sh'), process.execPath, ...nodeArgv], options));
  const m = await waitForLine(proc, /tcp 127\.0\.0\.1:(\d+)/, 'agentd');
  return {
    unix: join(home, 'run', 'agentd.sock'),
    tcp: { host: '127.0.0.1', port: Number(m[1]) },
    proc,
    stop: stopper(proc, () => rmSync(home, { recursive: true, force: true })),
  };
}

export async function startFloor(): Promise<Proc> {
  const dir = mkdtempSync(join(tmpdir(), 'agentd-floor-'));
  const unix = join(dir, 'floor.sock');
  const proc = track(spawn(process.execPath, [join(ROOT, 'bench/floor-server.mjs'), unix], { stdio: ['ignore', 'pipe', 'pipe'] }));
  const m = await waitForLine(proc, /port (\d+)/, 'floor server');
  return { unix, tcp: { host: '127.0.0.1', port: Number(m[1]) }, proc, stop: stopper(proc, () => rmSync(dir, { recursive: true, force: true })) };
}

/** The HTTP floor (bench/http-floor.mjs): a minimal node:http server answering `{}`; its base URL. */
export async function startHttpFloor(): Promise<{ base: string; proc: ChildProcess; stop: () => Promise<void> }> {
  const proc = track(spawn(process.execPath, [join(ROOT, 'bench/http-floor.mjs')], { stdio: ['ignore', 'pipe', 'pipe'] }));
  const m = await waitForLine(proc, /port (\d+)/, 'HTTP floor server');
  return { base: `http://127.0.0.1:${m[1]}`, proc, stop: stopper(proc, () => {}) };
}

function freePort(): Promise<number> {
  return new Promise((resolvePromise) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolvePromise(port));
    });
  });
}

/** Redis, when `redis-server` is on the PATH; null otherwise. */
export async function startRedis(): Promise<Proc | null> {
  if (spawnSync('sh', ['-c', 'command -v redis-server']).status !== 0) return null;
  const dir = mkdtempSync(join(tmpdir(), 'agentd-redis-'));
  const unix = join(dir, 'redis.sock');
  const port = await freePort();
  const proc = track(spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--unixsocket', unix, '--unixsocketperm', '700', '--save', '', '--appendonly', 'no', '--dir', dir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  }));
  await waitForLine(proc, /Ready to accept connections/, 'redis-server');
  return { unix, tcp: { host: '127.0.0.1', port }, proc, stop: stopper(proc, () => rmSync(dir, { recursive: true, force: true })) };
}

/** The design floor (bench/design-floor/main.mjs): agentd's shape at its least, storing in a fresh SQLite file. */
export async function startDesignFloor(workers: number, index: 'commit' | 'after'): Promise<Proc> {
  const dir = mkdtempSync(join(tmpdir(), 'agentd-design-floor-'));
  const unix = join(dir, 'floor.sock');
  const proc = track(spawn(process.execPath, [join(ROOT, 'bench/design-floor/main.mjs'), unix, join(dir, 'floor.db'), String(workers), index], { stdio: ['ignore', 'pipe', 'pipe'] }));
  const m = await waitForLine(proc, /port (\d+)/, 'design floor');
  return { unix, tcp: { host: '127.0.0.1', port: Number(m[1]) }, proc, stop: stopper(proc, () => rmSync(dir, { recursive: true, force: true })) };
}
