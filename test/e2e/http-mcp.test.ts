/**
 * The daemon as an MCP server at /mcp, driven by the MCP SDK's own client
 * over Streamable HTTP: each agent is a tool ask_<agent>, a call runs a turn.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, startDaemon, historyContents } from '../helpers/daemon.ts';
import { httpParts, type HttpDaemon } from '../helpers/http-daemon.ts';

let h: HttpDaemon;

beforeAll(async () => {
  h = httpParts(await startDaemon({ config: { agents: { assistant: { model: 'echo', description: 'echoes' } } }, args: ['--http', '127.0.0.1:0'] }));
});
afterAll(() => cleanup(h.daemon));

async function connect(token = h.token, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'agentd-test', version: '1' });
  const transport = new StreamableHTTPClientTransport(new URL(`${h.base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}`, ...headers } } });
  await client.connect(transport);
  return client;
}

const history = (agent: string, sender: string): Promise<string[]> => historyContents(h.daemon, agent, sender);

describe('MCP server', () => {
  it('lists each agent as ask_<agent>, and the list follows agents created', async () => {
    const client = await connect();
    const tools = (await client.listTools()).tools;
    expect(tools.map((t) => t.name)).toEqual(['ask_assistant']);
    expect(tools[0]!.description).toContain('echoes');
    expect(tools[0]!.inputSchema).toMatchObject({ required: ['message'] });
    const c = await h.daemon.client();
    await c.request('create_agent', { name: 'later', config: { model: 'echo' } });
    await c.close();
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(['ask_assistant', 'ask_later']);
    await client.close();
  });

  it('a call runs a turn of (agent, sender) and answers its text; without sender, the Mcp-Sender header names it', async () => {
    const client = await connect(h.token, { 'mcp-sender': 'from-header' });
    const r = await client.callTool({ name: 'ask_assistant', arguments: { message: 'hello over mcp', sender: 'mia' } });
    expect(r.isError).toBeFalsy();
    expect(r.content).toEqual([{ type: 'text', text: 'hello over mcp' }]);
    expect(await history('assistant', 'mia')).toEqual(['hello over mcp', 'hello over mcp']);
    await client.callTool({ name: 'ask_assistant', arguments: { message: 'header sender' } });
    expect(await history('assistant', 'from-header')).toEqual(['header sender', 'header sender']);
    await client.close();
  });

  it('an unknown tool or a missing message is an error, and nothing runs', async () => {
    const client = await connect();
    const unknown = await client.callTool({ name: 'ask_nobody', arguments: { message: 'x' } }).catch((e: unknown) => e);
    expect(String(unknown)).toContain('unknown tool "ask_nobody"');
    const missing = await client.callTool({ name: 'ask_assistant', arguments: { sender: 'nina' } }).catch((e: unknown) => e);
    expect(String(missing)).toContain('message is required');
    await expect(history('assistant', 'nina')).rejects.toMatchObject({ code: 404 });
    await client.close();
  });

  it('needs the token', async () => {
    await expect(connect('wrong')).rejects.toThrow(/401|wrong token/);
  });
});
