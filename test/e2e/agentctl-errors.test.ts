/**
 * agentctl never crashes: every failure is one line (or one JSON object with
 * --json) and an exit code of its own; a reader that goes away ends it
 * quietly. Also --version, help, and "did you mean".
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { resolve } from 'node:path';
import type { AgentdClient } from '../../src/client/index.ts';
import { COMMANDS } from '../../src/cli/commands/index.ts';
import { VERSION } from '../../src/shared/version.ts';
import { AGENTCTL, ctl, finished, spawnCtl } from '../helpers/cli.ts';
import { cleanup, makeHome, startDaemon, waitRunning, type Daemon } from '../helpers/daemon.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.ts';

vi.setConfig({ testTimeout: 180_000 });

let d: Daemon;
let api: FakeOpenAI;
let c: AgentdClient;
const run = (...args: string[]) => ctl(d.socketPath, args);
const bare = (...args: string[]) => ctl(null, args, { AGENTD_TOKEN: '' });

beforeAll(async () => {
  api = await startFakeOpenAI(['unauthorized']);
  const home = makeHome({
    providers: { fake: { type: 'openai', base_url: api.url, api_key_env: 'FAKE_API_KEY' } },
    agents: { assistant: { model: 'echo' }, locked: { provider: 'fake', model: 'unauthorized' } },
  });
  d = await startDaemon({ home, env: { FAKE_API_KEY: 'k' } });
  c = await d.client();
  await c.send('assistant', 'something to print', { sender: 'pipe' });
});
afterAll(async () => {
  await c?.close();
  await cleanup(d);
  await api?.close();
});

describe.concurrent('agentctl says what it is and what you meant', () => {
  it('--version and -V print the version; help and help COMMAND print usage; --help lists every command', async () => {
    const [version, short, help, helpCluster, clusterHelp] = await Promise.all([bare('--version'), bare('-V'), bare('help'), bare('help', 'cluster'), bare('cluster', '--help')]);
    expect(version).toEqual({ code: 0, stdout: `agentctl ${VERSION}\n`, stderr: '' });
    expect(short).toEqual(version);
    expect(help.code).toBe(0);
    for (const command of COMMANDS) expect(help.stdout).toContain(`\n  ${`${command.name} ${command.usage}`.trim()} `);
    expect(help.stdout).toContain('examples:\n  agentctl stream assistant');
    expect(helpCluster).toMatchObject({ code: 0, stdout: expect.stringMatching(/^usage: agentctl cluster \[--json\]\n/) });
    expect(clusterHelp).toEqual(helpCluster);
  });

  it('a misspelt command, group word or flag is answered with the closest one, exit 2', async () => {
    const [command, word, flag, unknown] = await Promise.all([bare('stram', 'a', 'hi'), bare('agents', 'lst'), bare('ping', '--jsn'), bare('frobnicate')]);
    expect(command).toMatchObject({ code: 2, stdout: '', stderr: 'agentctl: unknown command "stram" (did you mean "stream"?) (agentctl --help lists them)\n' });
    expect(word.stderr).toContain('unknown command "agents lst" (did you mean "agents list"?)');
    expect(flag).toMatchObject({ code: 2, stderr: expect.stringContaining('unknown flag --jsn (did you mean --json?)') });
    expect(unknown.stderr).not.toContain('did you mean');
  });
});

describe.concurrent('errors and exit codes', () => {
  it('--json makes errors one JSON line on stderr: usage, refused, cannot connect', async () => {
    const [refused, usage, noDaemon] = await Promise.all([
      run('send', 'nosuch', 'hi', '--json'),
      bare('stram', '--json'),
      bare('ping', '--json', '--socket', resolve(d.home, 'no.sock')),
    ]);
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(JSON.parse(refused.stderr)).toEqual({ error: { kind: 'daemon', exit: 1, code: 404, message: expect.stringContaining('error 404: unknown agent "nosuch"') } });
    expect(JSON.parse(usage.stderr)).toMatchObject({ error: { kind: 'usage', exit: 2 } });
    expect(noDaemon.code).toBe(3);
    expect(JSON.parse(noDaemon.stderr)).toMatchObject({ error: { kind: 'cannot_connect', exit: 3, message: expect.stringContaining('cannot connect to agentd') } });
  });

  it("a provider's 401 fails the turn with exit 4 and the provider's status, never as error 500", async () => {
    const [streamed, sent] = await Promise.all([run('stream', 'locked', 'hi', '--sender', 's401'), run('send', 'locked', 'hi', '--sender', 'se401')]);
    for (const r of [streamed, sent]) {
      expect(r.code).toBe(4);
      expect(r.stderr).toMatch(/^agentctl: turn failed.*fake: HTTP 401 Unauthorized: invalid credentials/);
      expect(r.stderr).not.toContain('500');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
  });

  it('a wrong token over TCP is exit 1 and says how to give the token', async () => {
    const r = await bare('ping', '--tcp', `127.0.0.1:${d.port}`, '--token', 'guess');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('agentctl: error 401: wrong token');
    for (const way of ['--token', 'AGENTD_TOKEN', '--home']) expect(r.stderr).toContain(way);
  });

  it('a reader that goes away (EPIPE) ends agentctl quietly with exit 0', async () => {
    const proc = spawnCtl(d.socketPath, ['history', 'assistant', '--sender', 'pipe']);
    proc.stdout!.destroy(); // closed before agentctl writes its first line: that write gets EPIPE
    let stderr = '';
    proc.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    const code = await new Promise((r) => proc.on('close', r));
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  });

  it.skipIf(!existsSync('/dev/full'))('output that cannot be written (a full disk) is one line on stderr and exit 6', async () => {
    const full = openSync('/dev/full', 'w');
    const proc = spawn(process.execPath, [AGENTCTL, 'stats', '--socket', d.socketPath], { stdio: ['ignore', full, 'pipe'] });
    closeSync(full);
    let stderr = '';
    proc.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    const code = await new Promise((r) => proc.on('close', r));
    expect({ code, stderr }).toEqual({ code: 6, stderr: 'agentctl: cannot write the output: ENOSPC\n' });
  });

  it('a daemon that dies mid-stream is exit 5 (connection lost), not 3 (cannot connect)', async () => {
    const dying = await startDaemon({ config: { agents: { slow: { model: 'echo', echo: { delay_ms: 1_000 } } } } });
    try {
      const watcher = await dying.client();
      const streaming = finished(spawnCtl(dying.socketPath, ['stream', 'slow', 'never finishes '.repeat(100), '--sender', 'd']));
      await waitRunning(watcher, 'slow', 'd');
      await watcher.close();
      await dying.stop('SIGKILL');
      const r = await streaming;
      expect(r.code).toBe(5);
      expect(r.stderr).toMatch(/agentctl: lost the connection to agentd: .*\(did the daemon stop\?\)\n$/);
    } finally {
      await cleanup(dying);
    }
  });
});
