/** Transports, start-up rules, flow control and shutdown of a real daemon process. */
import { describe, expect, it, onTestFinished } from 'vitest';
import { existsSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentdClient } from '../../src/client/index.ts';
import { collect, makeHome, runAgentd, startDaemon, waitFor, type Daemon, testDaemon, type DaemonOptions } from '../helpers/daemon.ts';
import { RawConn } from '../helpers/raw.ts';

const daemon = (opts: DaemonOptions = {}): Promise<Daemon> => testDaemon(opts);

describe('unix socket', () => {
  it('is mode 0600 inside a 0700 directory', async () => {
    const d = await daemon();
    expect(statSync(d.socketPath).mode & 0o777).toBe(0o600);
    expect(statSync(join(d.home, 'run')).mode & 0o777).toBe(0o700);
  });

  it('a live daemon is never taken over: a second start fails with a clear message', async () => {
    const d = await daemon();
    const second = await runAgentd(['--home', d.home, '--tcp', 'off']);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/another agentd is already running/);
    const c = await d.client();
    onTestFinished(() => c.close());
    await c.ping();
  });

  it('a socket file left by a dead daemon is replaced', async () => {
    const first = await startDaemon();
    await first.stop('SIGKILL');
    expect(existsSync(first.socketPath)).toBe(true);
    const d = await daemon({ home: first.home });
    const c = await d.client();
    onTestFinished(() => c.close());
    await c.ping();
  });
});

describe('tcp', () => {
  it('writes the chosen port to run/agentd.port and serves the protocol', async () => {
    const d = await daemon();
    expect(d.port).toBeGreaterThan(0);
    const c = await d.tcpClient();
    onTestFinished(() => c.close());
    const evs = await collect(c.stream('assistant', 'over tcp'));
    expect(evs.at(-1)).toMatchObject({ type: 'end', stop_reason: 'text' });
  });

  it('with a token, the first request must be auth; anything else gets 401 and a close', async () => {
    const d = await daemon({ config: { token: 's3cret' } });
    const raw = await RawConn.openTcp(d.port!);
    onTestFinished(() => raw.close());
    raw.send(1, { ping: {} });
    await raw.waitClosed();
    expect(raw.frames).toEqual([{ id: 1, last: true, body: { error: { code: 401, message: expect.any(String) } } }]);

    await expect(d.tcpClient({ token: 'wrong' })).rejects.toMatchObject({ code: 401 });
    const ok = await d.tcpClient({ token: 's3cret' });
    onTestFinished(() => ok.close());
    await ok.ping();
    // The unix socket needs no token: only the daemon's user can reach it.
    const local = await d.client();
    onTestFinished(() => local.close());
    await local.ping();
    expect(d.stderr()).not.toContain('s3cret');
  });

  it('refuses to bind a non-loopback address without a token, even with --tcp-insecure', async () => {
    const home = makeHome();
    const r = await runAgentd(['--home', home, '--tcp', '0.0.0.0:0', '--tcp-insecure']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/refusing to listen on 0\.0\.0\.0:0 without a token: --tcp-insecure \(tcp_insecure\) is for loopback addresses only/);
    expect(existsSync(join(home, 'run', 'agentd.sock'))).toBe(false);
  });
});

describe('configuration', () => {
  it('a bad config file stops start-up, naming the file, the field and the problem', async () => {
    const home = mkdtempSync(join(tmpdir(), 'agentd-badcfg-'));
    const file = join(home, 'agentd.json');
    writeFileSync(file, JSON.stringify({ agents: { a: { model: 'echo', echo: { delay_ms: 'slow' } } } }));
    const r = await runAgentd(['--home', home, '--tcp', 'off']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(file);
    expect(r.stderr).toMatch(/agents\.a\.echo\.delay_ms must be an integer >= 0, got "slow"/);

    writeFileSync(file, '{ not json');
    const r2 = await runAgentd(['--home', home, '--tcp', 'off']);
    expect(r2.code).toBe(1);
    expect(r2.stderr).toMatch(/is not valid JSON/);
  });

  it('--config FILE is read instead of $AGENTD_HOME/agentd.json', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentd-cfgflag-'));
    const file = join(dir, 'custom.json');
    writeFileSync(file, JSON.stringify({ agents: { custom: { model: 'echo' } } }));
    const d = await daemon({ args: ['--config', file] });
    const c = await d.client();
    onTestFinished(() => c.close());
    const agents = await c.request('list_agents');
    expect((agents.agent_list as { agents: { name: string }[] }).agents.map((a) => a.name)).toEqual(['custom']);
  });

  it('with no config file there is one agent, assistant, on echo', async () => {
    const d = await daemon();
    const c = await d.client();
    onTestFinished(() => c.close());
    const info = await c.request('get_agent', { name: 'assistant' });
    expect(info.agent_info).toMatchObject({ name: 'assistant', model: 'echo', max_iterations: 16 });
    await expect(c.request('get_agent', { name: 'nope' })).rejects.toMatchObject({ code: 404 });
  });
});

describe('flow control', () => {
  it('a connection that does not read is closed past the hard limit and its turn cancelled; others are unaffected', async () => {
    const d = await daemon({
      config: { high_water_bytes: 65536, hard_limit_bytes: 262144, agents: { assistant: { model: 'echo' } } },
    });
    const watcher = await d.client();
    onTestFinished(() => watcher.close());
    const stalled = await RawConn.open(d.socketPath);
    onTestFinished(() => stalled.close());
    stalled.socket.pause(); // never read
    // 4 MB of output (merged into few frames) overflows the 256 KiB limit even after the kernel's socket buffers.
    stalled.send(1, { stream: { agent: 'assistant', sender: 'flood', content: 'w '.repeat(2_000_000) } });
    await waitFor(async () => ((await watcher.stats()).connections as number) === 1, 'the stalled connection to be closed');
    await watcher.ping();
    const r = await watcher.send('assistant', 'still fine', { sender: 'other' });
    expect(r.content).toBe('still fine');
  });
});

describe('shutdown', () => {
  it('SIGTERM cancels running turns with "shutting down", removes socket and port file, exits 0', async () => {
    const d = await daemon({ config: { agents: { slow: { model: 'echo', echo: { delay_ms: 50 } } } } });
    const c = await AgentdClient.connect({ path: d.socketPath });
    onTestFinished(() => c.close());
    const evs: unknown[] = [];
    const turn = (async () => {
      // 500 words at 50 ms: the turn cannot end on its own before SIGTERM reaches it, however slow the machine.
      for await (const ev of c.stream('slow', Array.from({ length: 500 }, (_, i) => `w${i}`).join(' '))) {
        evs.push(ev);
        if (evs.length === 3) d.proc.kill('SIGTERM');
      }
    })();
    await turn;
    expect(evs.at(-1)).toMatchObject({ type: 'end', stop_reason: 'cancelled', error: 'shutting down' });
    expect((await d.exited).code).toBe(0);
    expect(existsSync(d.socketPath)).toBe(false);
    expect(existsSync(join(d.home, 'run', 'agentd.port'))).toBe(false);
  });
});
