/** MCP servers over stdio, driven end to end by the echo model's `/call`. */
import { describe, expect, it } from 'vitest';
import { startDaemon, cleanup, testClient, testDaemon, waitFor } from '../helpers/daemon.ts';
import { callTool, fixtureDir, isAlive, listMcps, notes, stdioEntry, waitGone, waitStatus } from '../helpers/mcp.ts';
import { end } from '../helpers/events.ts';
import type { StreamEvent } from '../../src/client/index.ts';

const SECRET = 'sk-fixture-secret-7f3a9';

describe('stdio MCP servers', { timeout: 90_000 }, () => {
  it('offers the server tools as <server>__<tool> and returns their results', async () => {
    const dir = fixtureDir();
    const d = await testDaemon({ config: { agents: { a: { mcps: { fx: stdioEntry(dir) } } } } });
    const c = await testClient(d);
    const { evs, result } = await callTool(c, 'a', 'fx__echo', { text: 'hi there' });
    expect(result).toMatchObject({ output: 'echo: hi there', is_error: false });
    expect(end(evs)).toMatchObject({ stop_reason: 'text' });
    const [info] = await listMcps(c, 'a');
    expect(info).toMatchObject({ agent: 'a', name: 'fx', transport: 'stdio', status: 'connected', error: '', tool_count: 9 });
    expect(info!.tools).toContain('fx__dotted_name');
    expect((await callTool(c, 'a', 'fx__dotted_name', {})).result.output).toBe('dotted ok');
    expect((await callTool(c, 'a', 'fx__picture', {})).result.output).toBe('a red dot\n[image image/png, 30 bytes]');
    // An isError result is an error tool result; the turn goes on.
    const failed = await callTool(c, 'a', 'fx__fail', { message: 'no such ticket' });
    expect(failed.result).toMatchObject({ output: 'no such ticket', is_error: true });
    expect(end(failed.evs).stop_reason).toBe('text');
    expect(notes(dir, 'pids')).toHaveLength(1); // one connection, shared by every turn
  });

  it('gives the server its env plus PATH only, and keeps env values out of tool results and errors', async () => {
    const dir = fixtureDir();
    const d = await testDaemon({ config: { agents: { a: { mcps: { fx: stdioEntry(dir, { env: { API_TOKEN: SECRET } }) } } } }, env: { AGENTD_LEAK_CHECK: 'daemon-only' } });
    const c = await testClient(d);
    expect((await callTool(c, 'a', 'fx__env', { name: 'API_TOKEN' })).result.output).toBe('[redacted]');
    expect((await callTool(c, 'a', 'fx__env', { name: 'PATH' })).result.output).not.toBe('(unset)');
    for (const name of ['AGENTD_LEAK_CHECK', 'HOME', 'AGENTD_MCP_ENV_KEYS']) {
      expect((await callTool(c, 'a', 'fx__env', { name })).result.output).toBe('(unset)');
    }
    expect((await callTool(c, 'a', 'fx__echo', { text: `token ${SECRET}` })).result.output).toBe('echo: token [redacted]');
    // The operator's own list shows the settings; peers do not.
    expect((await listMcps(c, 'a'))[0]!.config).toMatchObject({ env: { API_TOKEN: SECRET } });
    const peers = await callTool(c, 'a', 'peers', {});
    expect(peers.result.output).not.toContain(SECRET);
    expect(d.stderr()).not.toContain(SECRET);
  });

  it('kill cancels a hanging call at the server; the conversation stays valid', async () => {
    const dir = fixtureDir();
    const d = await testDaemon({ config: { agents: { a: { mcps: { fx: stdioEntry(dir) } } } } });
    const c = await testClient(d);
    const killer = await testClient(d);
    const evs: StreamEvent[] = [];
    for await (const ev of c.stream('a', '/call fx__hang {"tag":"t1"}', { sender: 'k' })) {
      evs.push(ev);
      if (ev.type !== 'tool_start') continue;
      // Kill once the call is at the server, so there is a call to cancel there.
      await waitFor(() => notes(dir, 'started').includes('t1'), 'the server to start the call');
      await killer.kill('a', 'k');
    }
    expect(end(evs)).toMatchObject({ stop_reason: 'cancelled' });
    await waitFor(() => notes(dir, 'cancelled').includes('t1'), 'the server to see the cancellation');
    const next = await callTool(c, 'a', 'fx__echo', { text: 'after' }, 'k');
    expect(next.result.output).toBe('echo: after');
    expect(end(next.evs).stop_reason).toBe('text');
  });

  it('a call past tool_timeout_ms ends as an error tool result and is cancelled at the server', async () => {
    const dir = fixtureDir();
    const d = await testDaemon({ config: { agents: { a: { tool_timeout_ms: 300, mcps: { fx: stdioEntry(dir) } } } } });
    const c = await testClient(d);
    const { evs, result } = await callTool(c, 'a', 'fx__hang', { tag: 'slow' });
    expect(result).toMatchObject({ is_error: true, output: 'MCP tool "hang" of server "fx" timed out after 300 ms (tool_timeout_ms)' });
    expect(end(evs).stop_reason).toBe('text');
    await waitFor(() => notes(dir, 'cancelled').includes('slow'), 'the server to see the cancellation');
  });

  it('a crashed server is an error result, then is reconnected (auto_restart)', async () => {
    const dir = fixtureDir();
    const d = await testDaemon({ config: { agents: { a: { mcps: { fx: stdioEntry(dir) } } } } });
    const c = await testClient(d);
    const crashed = await callTool(c, 'a', 'fx__crash', {});
    expect(crashed.result.is_error).toBe(true);
    const info = await waitStatus(c, 'a', 'fx', 'connected');
    expect(info.tool_count).toBe(9);
    expect(notes(dir, 'pids')).toHaveLength(2);
    expect((await callTool(c, 'a', 'fx__add', { a: 2, b: 3 })).result.output).toBe('5');
  });

  it('a server that pages tools/list for ever fails with a clear error after 100 pages', async () => {
    const dir = fixtureDir();
    const fx = stdioEntry(dir, { eager: true, auto_restart: false, env: { MCP_FIXTURE_TOOLS: 'endless' } });
    const d = await testDaemon({ config: { agents: { a: { mcps: { fx } } } } });
    const c = await testClient(d);
    const info = await waitStatus(c, 'a', 'fx', 'failed');
    expect(info.error).toMatch(/tools\/list still had more pages after 100/);
    expect(info.tool_count).toBe(0);
    const pages = notes(dir, 'pages').map(Number);
    expect(pages).toContain(99);
    expect(pages.every((p) => p < 100)).toBe(true); // never a 101st page
    expect((await c.send('a', 'still answers')).content).toBe('still answers');
  });

  it('eager servers start with the daemon; management operations and their events', async () => {
    const dir = fixtureDir();
    const d = await testDaemon({ config: { agents: { a: { mcps: { fx: stdioEntry(dir, { eager: true }) } }, b: {} } } });
    const c = await testClient(d);
    await waitStatus(c, 'a', 'fx', 'connected');
    const watcher = await testClient(d);
    const seen: Record<string, unknown>[] = [];
    const stream = watcher.openStream('subscribe_mcp_events', {});
    const reading = (async () => {
      for await (const body of stream) seen.push(body);
    })();
    await watcher.ping();

    const upserted = await c.request('upsert_mcp', { agent: 'b', config: { name: 'tools', ...stdioEntry(dir), eager: true } });
    expect(upserted.mcp_info).toMatchObject({ agent: 'b', name: 'tools', transport: 'stdio' });
    await waitStatus(c, 'b', 'tools', 'connected');
    expect(seen.map((b) => (b.mcp_event as { status: string }).status)).toEqual(expect.arrayContaining(['disconnected', 'connecting', 'connected']));

    const before = notes(dir, 'pids').map(Number);
    await c.request('reconnect_mcp', { agent: 'b', name: 'tools' });
    await waitFor(() => notes(dir, 'pids').length === before.length + 1, 'a new server process');
    await waitStatus(c, 'b', 'tools', 'connected');

    const pid = Number(notes(dir, 'pids').at(-1));
    await c.request('delete_mcp', { agent: 'b', name: 'tools' });
    await waitGone(pid, 'the deleted server to stop');
    expect(await listMcps(c, 'b')).toEqual([]);
    await expect(c.request('delete_mcp', { agent: 'b', name: 'tools' })).rejects.toMatchObject({ code: 404 });
    await expect(c.request('reconnect_mcp', { agent: 'b', name: 'nope' })).rejects.toMatchObject({ code: 404 });
    await expect(c.request('upsert_mcp', { agent: 'b', config: { name: 'x' } })).rejects.toMatchObject({ code: 400 });

    // Deleting the agent stops its servers.
    const aPid = Number(notes(dir, 'pids')[0]);
    expect(isAlive(aPid)).toBe(true);
    await c.request('delete_agent', { name: 'a' });
    await waitGone(aPid, "the deleted agent's server to stop");
    await watcher.request('close', { request: stream.id });
    await reading;
  });

  it('`tools` can name MCP tools; a server that cannot start leaves the turn running without it', async () => {
    const dir = fixtureDir();
    const d = await testDaemon({
      config: { agents: { a: { tools: ['fx__add'], mcps: { fx: stdioEntry(dir), bad: { command: '/nonexistent/mcp-server', auto_restart: false } } } } },
    });
    const c = await testClient(d);
    expect((await callTool(c, 'a', 'fx__add', { a: 1, b: 1 })).result.output).toBe('2');
    expect((await callTool(c, 'a', 'fx__echo', { text: 'x' })).result).toMatchObject({ is_error: true, output: 'unknown tool "fx__echo"' });
    const bad = (await listMcps(c, 'a')).find((m) => m.name === 'bad')!;
    expect(bad.status).toBe('failed');
    expect(bad.error).not.toBe('');
  });

  /** A daemon whose agent `a` has one eager stdio server, connected; and that server's pid. */
  async function daemonWithEagerServer(env: Record<string, string> = {}): Promise<{ d: Awaited<ReturnType<typeof startDaemon>>; pid: number; dir: string }> {
    const dir = fixtureDir();
    const d = await startDaemon({ config: { agents: { a: { mcps: { fx: stdioEntry(dir, { eager: true, env }) } } } } });
    try {
      const c = await d.client();
      await waitStatus(c, 'a', 'fx', 'connected');
      await c.close();
    } catch (err) {
      await cleanup(d);
      throw err;
    }
    return { d, pid: Number(notes(dir, 'pids')[0]), dir };
  }

  it('a process the server started in a session of its own dies with the daemon too', async () => {
    const { d, dir } = await daemonWithEagerServer({ MCP_FIXTURE_ESCAPE: '1' });
    const escaped = Number(notes(dir, 'escaped')[0]);
    try {
      expect(isAlive(escaped)).toBe(true);
      await d.stop('SIGKILL');
      await waitGone(escaped, 'the escaped process to die with the daemon');
    } finally {
      await cleanup(d);
    }
  });

  it('no server outlives the daemon, even after kill -9', async () => {
    const { d, pid } = await daemonWithEagerServer();
    try {
      expect(isAlive(pid)).toBe(true);
      await d.stop('SIGKILL');
      await waitGone(pid, 'the server to die with the daemon');
    } finally {
      await cleanup(d);
    }
  });

  it('a clean shutdown stops the servers', async () => {
    const { d, pid } = await daemonWithEagerServer();
    try {
      expect(await d.stop('SIGTERM')).toMatchObject({ code: 0 });
      await waitGone(pid, 'the server to stop at shutdown');
    } finally {
      await cleanup(d);
    }
  });
});
