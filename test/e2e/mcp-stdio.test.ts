/** MCP servers over stdio, driven end to end by the echo model's `/call`. */
import { describe, expect, it } from 'vitest';
import { testClient, testDaemon } from '../helpers/daemon.ts';
import { callTool, fixtureDir, listMcps, notes, stdioEntry, waitStatus } from '../helpers/mcp.ts';
import { end } from '../helpers/events.ts';

describe('stdio MCP servers', () => {
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
  });
});
