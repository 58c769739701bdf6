/** MCP servers over Streamable HTTP, and the SDK's own `everything` server over stdio. */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { testClient, testDaemon } from '../helpers/daemon.ts';
import { callTool, fixtureDir, listMcps, notes, startHttpServer, waitStatus } from '../helpers/mcp.ts';
import { end } from '../helpers/events.ts';
import type { StreamEvent } from '../../src/client/index.ts';

const SECRET = 'Bearer fixture-secret-93b1';

describe('Streamable HTTP MCP servers', { timeout: 90_000 }, () => {
  it('calls tools with the configured headers, and cancels a hanging call on kill', async () => {
    const dir = fixtureDir();
    const server = await startHttpServer(dir);
    const d = await testDaemon({ config: { agents: { a: { mcps: { web: { url: server.url, headers: { Authorization: SECRET } } } } } } });
    const c = await testClient(d);
    expect((await callTool(c, 'a', 'web__add', { a: 20, b: 22 })).result).toMatchObject({ output: '42', is_error: false });
    // The header reached the server; its value never comes back.
    expect((await callTool(c, 'a', 'web__header', { name: 'authorization' })).result.output).toBe('[redacted]');
    expect((await callTool(c, 'a', 'web__fail', {})).result).toMatchObject({ output: 'it failed', is_error: true });
    expect((await listMcps(c, 'a'))[0]).toMatchObject({ transport: 'http', status: 'connected', tool_count: 9 });

    const killer = await testClient(d);
    const evs: StreamEvent[] = [];
    for await (const ev of c.stream('a', '/call web__hang {"tag":"h1"}', { sender: 'k' })) {
      evs.push(ev);
      if (ev.type !== 'tool_start') continue;
      // Kill once the call is at the server, so there is a call to cancel there.
      await expect.poll(() => notes(dir, 'started'), { timeout: 15_000 }).toContain('h1');
      await killer.kill('a', 'k');
    }
    expect(end(evs).stop_reason).toBe('cancelled');
    await expect.poll(() => notes(dir, 'cancelled'), { timeout: 15_000 }).toContain('h1');
    expect(d.stderr()).not.toContain('fixture-secret');
  });

  it('a server that went away is reconnected once it is back', async () => {
    const dir = fixtureDir();
    const first = await startHttpServer(dir);
    const d = await testDaemon({ config: { agents: { a: { mcps: { web: { url: first.url } } } } } });
    const c = await testClient(d);
    expect((await callTool(c, 'a', 'web__echo', { text: 'one' })).result.output).toBe('echo: one');
    const crashed = await callTool(c, 'a', 'web__crash', {});
    expect(crashed.result.is_error).toBe(true);
    await waitStatus(c, 'a', 'web', 'failed');
    await startHttpServer(dir, first.port);
    await waitStatus(c, 'a', 'web', 'connected');
    expect((await callTool(c, 'a', 'web__echo', { text: 'two' })).result.output).toBe('echo: two');
  });
});

const EVERYTHING = resolve(import.meta.dirname, '../../node_modules/@modelcontextprotocol/server-everything/dist/index.js');

describe('@modelcontextprotocol/server-everything', { timeout: 90_000 }, () => {
  const installed = existsSync(EVERYTHING);
  if (!installed) console.log(`skipped: ${EVERYTHING} is not installed (npm install @modelcontextprotocol/server-everything)`);
  it.skipIf(!installed)('runs over stdio: its echo and add tools answer', async () => {
    const d = await testDaemon({ config: { agents: { a: { mcps: { every: { command: process.execPath, args: [EVERYTHING, 'stdio'] } } } } } });
    const c = await testClient(d);
    const echoed = await callTool(c, 'a', 'every__echo', { message: 'hello everything' });
    expect(echoed.result).toMatchObject({ is_error: false, output: expect.stringContaining('hello everything') });
    const info = (await listMcps(c, 'a'))[0]!;
    expect(info.status).toBe('connected');
    expect(info.tools).toEqual(expect.arrayContaining(['every__echo']));
  });
});
