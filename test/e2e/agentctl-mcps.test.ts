/**
 * `agentctl mcps ...` against a real daemon and the stdio MCP fixture server:
 * list, add (secrets redacted unless --json), rm, reconnect, events, and the
 * usage errors of add.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentdClient } from '../../src/client/index.ts';
import { ctl, finished, spawnCtl, untilOutput } from '../helpers/cli.ts';
import { cleanup, startDaemon, makeHome, type Daemon } from '../helpers/daemon.ts';
import { STDIO_SERVER, waitStatus } from '../helpers/mcp.ts';

// Every CLI run starts a Node process that compiles TypeScript.
vi.setConfig({ testTimeout: 180_000 });

const SECRET = 'sk-cli-secret-51c2e';
let d: Daemon;
let c: AgentdClient;
let dir: string;
const run = (...args: string[]) => ctl(d.socketPath, args);
/** The flags of `mcps add` that run the stdio fixture server. */
const fixtureFlags = (): string[] => ['--command', process.execPath, '--arg', STDIO_SERVER, '--env', `MCP_FIXTURE_DIR=${dir}`, '--env', `API_TOKEN=${SECRET}`];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentd-mcp-cli-'));
  d = await startDaemon({ home: makeHome({ agents: { listed: { model: 'echo' }, adder: { model: 'echo' }, watched: { model: 'echo' }, other: { model: 'echo' } } }) });
  c = await d.client();
});
afterAll(async () => {
  await c?.close();
  await cleanup(d);
  rmSync(dir, { recursive: true, force: true });
});

describe.concurrent('agentctl mcps', () => {
  it('add prints the server with env values redacted; --json shows them; mcps lists one line per server', async () => {
    const added = await run('mcps', 'add', 'adder', 'fx', ...fixtureFlags(), '--eager');
    expect(added.code).toBe(0);
    expect(added.stdout).toMatch(/^adder\/fx\s+stdio\s+(disconnected|connecting|connected)\s+\d+ tools?\n/);
    expect(added.stdout).toContain('  env: MCP_FIXTURE_DIR=[redacted] API_TOKEN=[redacted]\n');
    expect(added.stdout).toContain('  eager: true, auto_restart: true\n');
    expect(added.stdout).not.toContain(SECRET);
    await waitStatus(c, 'adder', 'fx', 'connected');
    const [all, one, asJson, none] = await Promise.all([run('mcps'), run('mcps', 'adder'), run('mcps', 'adder', '--json'), run('mcps', 'other')]);
    expect(all.stdout).toMatch(/(^|\n)adder\/fx\s+stdio\s+connected\s+9 tools\n/);
    expect(one).toMatchObject({ code: 0 });
    expect(one.stdout).toMatch(/^adder\/fx\s+stdio\s+connected\s+9 tools\n$/);
    expect(all.stdout + one.stdout).not.toContain(SECRET);
    const [info] = JSON.parse(asJson.stdout).mcps;
    expect(info).toMatchObject({ agent: 'adder', name: 'fx', status: 'connected', tool_count: 9, config: { env: { API_TOKEN: SECRET } } });
    expect(none).toMatchObject({ code: 0, stdout: 'no MCP servers for other (add one with agentctl mcps add)\n' });
    const http = await run('mcps', 'add', 'adder', 'web', '--url', 'http://127.0.0.1:9/mcp', '--header', `Authorization=Bearer ${SECRET}`, '--no-auto-restart', '--json');
    expect(JSON.parse(http.stdout)).toMatchObject({ transport: 'http', config: { url: 'http://127.0.0.1:9/mcp', headers: { Authorization: `Bearer ${SECRET}` }, auto_restart: false } });
  });

  it('rm removes a server (404 the second time); unknown agents are 404', async () => {
    await c.upsertMcp('listed', 'gone', { command: process.execPath, args: [STDIO_SERVER], env: { MCP_FIXTURE_DIR: dir } });
    expect(await run('mcps', 'rm', 'listed', 'gone')).toMatchObject({ code: 0, stdout: 'removed MCP server gone of listed\n' });
    expect(await c.listMcps('listed')).toEqual([]);
    const [again, unknown] = await Promise.all([run('mcps', 'rm', 'listed', 'gone'), run('mcps', 'nobody')]);
    expect(again).toMatchObject({ code: 1, stderr: 'agentctl: error 404: agent "listed" has no MCP server "gone"\n' });
    expect(unknown).toMatchObject({ code: 1, stderr: 'agentctl: error 404: unknown agent "nobody"\n' });
  });

  it('events prints one line per status change until Ctrl-C; reconnect shows up there', async () => {
    await c.upsertMcp('watched', 'fx', { command: process.execPath, args: [STDIO_SERVER], env: { MCP_FIXTURE_DIR: dir }, eager: true });
    await waitStatus(c, 'watched', 'fx', 'connected');
    const watcher = spawnCtl(d.socketPath, ['mcps', 'events', 'watched']);
    const done = finished(watcher);
    const reconnected = untilOutput(watcher.stdout!, (t) => / connected {2}9 tools\n/.test(t));
    await untilOutput(watcher.stderr!, (t) => t.includes('watching MCP events'));
    expect(await run('mcps', 'reconnect', 'watched', 'fx')).toMatchObject({ code: 0, stdout: 'reconnecting MCP server fx of watched\n' });
    await reconnected;
    watcher.kill('SIGINT');
    const r = await done;
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines.at(-1)).toMatch(/^\d\d:\d\d:\d\d\.\d{3} {2}watched\/fx {2}stdio {2}connected {2}9 tools$/);
    expect(lines.some((l) => / watched\/fx {2}stdio {2}connecting {2}0 tools$/.test(l))).toBe(true);
    expect(r.stdout).not.toContain('adder/'); // only the agent asked for
  });

  it('add refuses wrong flag combinations with exit 2 and says why', async () => {
    const [both, neither, badEnv, headerOnStdio, help] = await Promise.all([
      run('mcps', 'add', 'adder', 'x', '--command', 'node', '--url', 'http://h/mcp'),
      run('mcps', 'add', 'adder', 'x'),
      run('mcps', 'add', 'adder', 'x', '--command', 'node', '--env', 'NOEQUALS'),
      run('mcps', 'add', 'adder', 'x', '--command', 'node', '--header', 'A=b'),
      run('mcps', 'add', '--help'),
    ]);
    for (const r of [both, neither]) expect(r).toMatchObject({ code: 2, stderr: 'agentctl: mcps add takes exactly one of --command CMD (stdio) and --url URL (Streamable HTTP)\n' });
    expect(badEnv).toMatchObject({ code: 2, stderr: 'agentctl: --env takes K=V, got "NOEQUALS"\n' });
    expect(headerOnStdio.code).toBe(2);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('add an MCP server to an agent');
    expect(help.stdout).toContain('example:\n  agentctl mcps add');
    expect((await run('mcps', 'add', 'adder', 'bad name', '--command', 'node')).code).toBe(1); // the daemon validates the name: 400
  });
});
