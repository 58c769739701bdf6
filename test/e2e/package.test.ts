/**
 * The client as a package: `npm pack`, install the tarball into a fresh
 * project, import `agentd/client` from plain Node ESM and from TypeScript,
 * run a turn, and run the installed `agentctl` bin. One pack for the file.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { cleanup, startDaemon, type Daemon } from '../helpers/daemon.ts';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

vi.setConfig({ testTimeout: 300_000, hookTimeout: 600_000 });

let dir: string;
let proj: string;
let d: Daemon;

/**
 * Installs the tarball as npm would. Without registry access npm needs every
 * dependency in its cache; when the cache lacks them, the tarball is unpacked
 * into node_modules/agentd by hand, its dependencies linked to the repo's.
 */
async function install(tarball: string): Promise<void> {
  try {
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund', tarball], { cwd: proj });
    return;
  } catch {
    // the npm cache lacks the dependencies: fall through
  }
  const modules = join(proj, 'node_modules');
  mkdirSync(join(modules, '.bin'), { recursive: true });
  await run('tar', ['xzf', tarball, '-C', modules]);
  renameSync(join(modules, 'package'), join(modules, 'agentd'));
  symlinkSync(join(ROOT, 'node_modules'), join(modules, 'agentd', 'node_modules'));
  // package.json's "bin": the daemon's launcher is a shell script, agentctl a Node script.
  for (const [bin, file] of [['agentd', 'agentd'], ['agentctl', 'agentctl.mjs']] as const) symlinkSync(`../agentd/bin/${file}`, join(modules, '.bin', bin));
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentd-pack-'));
  proj = join(dir, 'proj');
  mkdirSync(proj);
  writeFileSync(join(proj, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  const [packed] = await Promise.all([
    run('npm', ['pack', '--pack-destination', dir], { cwd: ROOT, maxBuffer: 1 << 24 }),
    startDaemon({ config: { agents: { assistant: { model: 'echo' } } } }).then((x) => (d = x)),
  ]);
  expect(packed.stdout.trim().split('\n').at(-1)).toMatch(/^agentd-.*\.tgz$/);
  await install(join(dir, readdirSync(dir).find((f) => f.endsWith('.tgz'))!));
});
afterAll(async () => {
  if (d !== undefined) await cleanup(d);
  rmSync(dir, { recursive: true, force: true });
});

const ESM = `
import { AgentdClient } from 'agentd/client';
import * as root from 'agentd';
const c = await AgentdClient.connect(); // $AGENTD_HOME/run/agentd.sock
let text = '';
for await (const ev of c.stream('assistant', 'hello from a package')) if (ev.type === 'chunk') text += ev.content;
const agents = await c.listAgents();
await c.close();
console.log(JSON.stringify({ text, agents: agents.map((a) => a.name), sameClass: root.AgentdClient === AgentdClient }));
`;

const TS_OK = `
import { AgentdClient, type AgentInfo, type StreamEvent, type Stats } from 'agentd/client';
const c: AgentdClient = await AgentdClient.connect({ home: process.env.AGENTD_HOME });
const agents: AgentInfo[] = await c.listAgents();
const stats: Stats = await c.stats();
const workers: number = stats.workers;
for await (const ev of c.stream('assistant', 'typed')) {
  const e: StreamEvent = ev;
  if (e.type === 'end') console.log(e.stop_reason, e.usage.total_tokens, agents.length, workers);
}
await c.close();
`;

/** Wrong on purpose: a typed package rejects it (an `any`-typed one would not). */
const TS_BAD = `
import { AgentdClient } from 'agentd/client';
const c = await AgentdClient.connect();
const workers: string = (await c.stats()).workers;
await c.listAgents('unexpected');
`;

const TSCONFIG = { compilerOptions: { target: 'ES2022', module: 'nodenext', moduleResolution: 'nodenext', strict: true, noEmit: true, types: ['node'], typeRoots: [join(ROOT, 'node_modules', '@types')], skipLibCheck: true } };

describe('the installed package', () => {
  it('imports agentd/client from plain Node ESM and runs a turn on the default connection', async () => {
    writeFileSync(join(proj, 'use.mjs'), ESM);
    const { stdout } = await run(process.execPath, ['use.mjs'], { cwd: proj, env: { ...process.env, AGENTD_HOME: d.home } });
    expect(JSON.parse(stdout)).toEqual({ text: 'hello from a package', agents: ['assistant'], sameClass: true });
  });

  it('type-checks TypeScript against its declarations, and rejects wrong types', async () => {
    writeFileSync(join(proj, 'tsconfig.json'), JSON.stringify({ ...TSCONFIG, files: ['use.ts'] }));
    writeFileSync(join(proj, 'use.ts'), TS_OK);
    await run(process.execPath, [TSC, '-p', '.'], { cwd: proj });
    writeFileSync(join(proj, 'tsconfig.bad.json'), JSON.stringify({ ...TSCONFIG, files: ['bad.ts'] }));
    writeFileSync(join(proj, 'bad.ts'), TS_BAD);
    const bad = await run(process.execPath, [TSC, '-p', 'tsconfig.bad.json'], { cwd: proj }).then(() => null, (err: { stdout: string }) => err.stdout);
    expect(bad).toContain("bad.ts(4,7): error TS2322: Type 'number' is not assignable to type 'string'.");
    expect(bad).toContain('bad.ts(5,20): error TS2554: Expected 0 arguments, but got 1.');
  });

  it('runs the installed agentctl bin', async () => {
    const bin = join(proj, 'node_modules', '.bin', 'agentctl');
    const { stdout } = await run(bin, ['ping'], { cwd: proj, env: { ...process.env, AGENTD_HOME: d.home } });
    expect(stdout).toMatch(/^pong in \d+(\.\d)? (µs|ms)\n$/);
    const help = await run(bin, ['--help'], { cwd: proj });
    expect(help.stdout).toContain('agentctl: talk to a running agentd');
  });

  it('npm install -g . puts agentd and agentctl on the PATH (into a temporary prefix)', async () => {
    const prefix = join(dir, 'global');
    await run('npm', ['install', '-g', '--offline', '--no-audit', '--no-fund', '--prefix', prefix, ROOT]);
    const { stdout } = await run(join(prefix, 'bin', 'agentctl'), ['ping'], { env: { ...process.env, AGENTD_HOME: d.home } });
    expect(stdout).toMatch(/^pong in \d+(\.\d)? (µs|ms)\n$/);
    const version = await run(join(prefix, 'bin', 'agentd'), ['--version']);
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });
});
