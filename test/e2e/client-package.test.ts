/**
 * agentd-client as a user gets it: `npm pack` of packages/client, installed
 * into an empty project from the npm registry (for msgpackr and @types/node),
 * brings no native build and nothing of the daemon's; a plain .mjs streams a
 * turn from a real daemon; its declarations type-check under TypeScript's
 * default settings. The registry is a service: without it the suite skips
 * (fails under CI=true).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { cleanup, startDaemon, type Daemon } from '../helpers/daemon.ts';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const PACKAGE = join(ROOT, 'packages', 'client');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

vi.setConfig({ testTimeout: 300_000, hookTimeout: 600_000 });

const registryUp = await run('npm', ['ping'], { timeout: 30_000 }).then(
  () => true,
  (err: Error) => {
    if (process.env.CI === 'true') throw new Error(`the npm registry does not answer (CI=true): ${err.message}`);
    console.warn(`skipping the agentd-client package tests: the npm registry does not answer (${err.message.split('\n')[0]})`);
    return false;
  },
);

let dir: string;
let proj: string;
let d: Daemon;

beforeAll(async () => {
  if (!registryUp) return;
  dir = mkdtempSync(join(tmpdir(), 'agentd-client-pack-'));
  proj = join(dir, 'proj');
  mkdirSync(proj);
  writeFileSync(join(proj, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  // One after another: the pack's compile beside a daemon's start slows both on a small machine.
  const packed = await run('npm', ['pack', '--pack-destination', dir], { cwd: PACKAGE, maxBuffer: 1 << 24 });
  const tarball = packed.stdout.trim().split('\n').at(-1)!;
  expect(tarball).toMatch(/^agentd-client-\d+\.\d+\.\d+\.tgz$/);
  await run('npm', ['install', '--no-audit', '--no-fund', join(dir, tarball)], { cwd: proj });
  d = await startDaemon({ config: { agents: { assistant: { model: 'echo' } } } });
});
afterAll(async () => {
  if (d !== undefined) await cleanup(d);
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** Every installed package's name (scoped ones as @scope/name). */
function installed(modules: string): string[] {
  return readdirSync(modules)
    .filter((n) => !n.startsWith('.'))
    .flatMap((n) => (n.startsWith('@') ? readdirSync(join(modules, n)).map((m) => `${n}/${m}`) : [n]));
}

/** The bare specifiers the package's JavaScript imports. */
function bareImports(at: string): Set<string> {
  const found = new Set<string>();
  for (const entry of readdirSync(at, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.js')) continue;
    for (const m of readFileSync(join(entry.parentPath, entry.name), 'utf8').matchAll(/\bfrom '([^.'][^']*)'/g)) found.add(m[1]!);
  }
  return found;
}

const STREAM_MJS = `
import { AgentdClient } from 'agentd-client';
const c = await AgentdClient.connect(); // $AGENTD_HOME/run/agentd.sock
const types = [];
let text = '';
for await (const ev of c.stream('assistant', 'streamed from a package')) {
  types.push(ev.type);
  if (ev.type === 'chunk') text += ev.content;
}
await c.close();
console.log(JSON.stringify({ text, types }));
`;

/** Default settings but for what a Node ESM project must say: no "types", no skipLibCheck. */
const TSCONFIG = { compilerOptions: { module: 'nodenext', strict: true, noEmit: true } };

const TYPED = `
import { AgentdClient, type AgentEvent, type RetryOptions, type StreamEvent } from 'agentd-client';
const retry: RetryOptions = { attempts: 3, initialDelayMs: 100 };
const c = await AgentdClient.connect({ home: process.env.AGENTD_HOME, reconnect: true, retry });
for await (const ev of c.stream('assistant', 'typed')) {
  const e: StreamEvent = ev;
  if (e.type === 'end') console.log(e.stop_reason, e.usage.total_tokens);
}
for await (const ev of c.events()) {
  const e: AgentEvent = ev;
  if (e.type === 'done') break;
}
await c.close();
`;

/** Wrong on purpose: typed declarations reject it (any-typed ones would not). */
const MISTYPED = `
import { AgentdClient } from 'agentd-client';
const c = await AgentdClient.connect();
for await (const ev of c.events()) if (ev.kind === 'done') break;
`;

describe.skipIf(!registryUp)('the installed agentd-client package', () => {
  it('brings msgpackr and nothing of the daemon, with no native build', () => {
    const modules = join(proj, 'node_modules');
    const names = installed(modules);
    expect(names).toContain('agentd-client');
    expect(names).toContain('msgpackr');
    for (const daemonOnly of ['better-sqlite3', 'pino', 'pg', 'piscina', '@nats-io/transport-node', 'zod', '@modelcontextprotocol/sdk']) expect(names).not.toContain(daemonOnly);
    expect(names.length).toBeLessThanOrEqual(10);
    // node-gyp writes build/ when it compiles an addon: msgpackr's optional one comes prebuilt.
    expect(names.filter((n) => existsSync(join(modules, n, 'build')))).toEqual([]);
    const imports = [...bareImports(join(modules, 'agentd-client', 'dist'))];
    expect(imports.filter((s) => !s.startsWith('node:'))).toEqual(['msgpackr']);
  });

  it("streams a turn from a real daemon through 'agentd-client' in a plain .mjs", async () => {
    writeFileSync(join(proj, 'stream.mjs'), STREAM_MJS);
    const { stdout } = await run(process.execPath, ['stream.mjs'], { cwd: proj, env: { ...process.env, AGENTD_HOME: d.home } });
    const out = JSON.parse(stdout) as { text: string; types: string[] };
    expect(out.text).toBe('streamed from a package');
    expect(out.types[0]).toBe('start');
    expect(out.types.at(-1)).toBe('end');
  });

  it("type-checks against its declarations under TypeScript's defaults, and rejects wrong types", async () => {
    writeFileSync(join(proj, 'tsconfig.json'), JSON.stringify({ ...TSCONFIG, files: ['typed.ts'] }));
    writeFileSync(join(proj, 'typed.ts'), TYPED);
    await run(process.execPath, [TSC, '-p', '.'], { cwd: proj });
    writeFileSync(join(proj, 'tsconfig.bad.json'), JSON.stringify({ ...TSCONFIG, files: ['mistyped.ts'] }));
    writeFileSync(join(proj, 'mistyped.ts'), MISTYPED);
    const bad = await run(process.execPath, [TSC, '-p', 'tsconfig.bad.json'], { cwd: proj }).then(() => null, (err: { stdout: string }) => err.stdout);
    expect(bad).toContain("mistyped.ts(4,43): error TS2339: Property 'kind' does not exist on type 'AgentEvent'.");
  });
});
