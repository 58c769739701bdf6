/**
 * The daemon as an MCP server (`/mcp`, Streamable HTTP, stateless):
 * docs/http-ecosystem.md. Each agent is a tool `ask_<agent>` taking
 * `{message, sender?}`; a call runs one turn of the pair (agent, sender —
 * the argument, else the `Mcp-Sender` header, else the daemon's
 * `default_sender`) and answers its final text. The tool list is read from
 * `list_agents` on every request, so it follows agents created and deleted.
 * Each request gets its own server and transport (the SDK's stateless mode):
 * nothing is held between requests.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { toWireError } from '../../../shared/errors.ts';
import type { HttpExchange } from '../router.ts';
import { agentNames, runTurn } from './turn.ts';

const PREFIX = 'ask_';
const VERSION = '1';

function toolOf(a: { name: string; description: string; model: string }): Tool {
  return {
    name: `${PREFIX}${a.name}`,
    title: `Ask ${a.name}`,
    description: `Sends a message to the agent "${a.name}"${a.description === '' ? '' : ` (${a.description})`} and answers its reply. The conversation is the pair (agent, sender): it remembers earlier messages of the same sender.`,
    inputSchema: {
      type: 'object',
      properties: {
        message: { type: 'string', description: 'the message to the agent' },
        sender: { type: 'string', description: 'whose conversation it is (default: the Mcp-Sender header, else the daemon\'s default sender)' },
      },
      required: ['message'],
    },
  };
}

/** The sender a call names: its argument, else the request's `Mcp-Sender` header, else none (the default sender). */
function senderOf(args: Record<string, unknown>, req: IncomingMessage): string | null {
  if (args.sender !== undefined && args.sender !== null) {
    if (typeof args.sender !== 'string') throw new McpError(ErrorCode.InvalidParams, 'sender must be a string');
    if (args.sender !== '') return args.sender;
  }
  const header = req.headers['mcp-sender'];
  return typeof header === 'string' && header !== '' ? header : null;
}

async function callAgent(req: IncomingMessage, x: HttpExchange, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  if (!name.startsWith(PREFIX)) throw new McpError(ErrorCode.InvalidParams, `unknown tool "${name}": the tools are ask_<agent>`);
  const agent = name.slice(PREFIX.length);
  if (typeof args.message !== 'string') throw new McpError(ErrorCode.InvalidParams, `${name}: message is required, a string`);
  const sender = senderOf(args, req);
  try {
    const out = await runTurn(x.requester(), { agent, sender, content: args.message });
    if (out.end.error !== '') return { content: [{ type: 'text', text: `the turn failed: ${out.end.error}` }], isError: true, _meta: { run_id: out.runId } };
    return { content: [{ type: 'text', text: out.text }], _meta: { run_id: out.runId, usage: out.end.usage } };
  } catch (err) {
    const { code, message } = toWireError(err);
    if (code === 404) throw new McpError(ErrorCode.InvalidParams, `unknown tool "${name}": ${message}`);
    return { content: [{ type: 'text', text: `${code}: ${message}` }], isError: true };
  }
}

function serverFor(req: IncomingMessage, x: HttpExchange): Server {
  const server = new Server({ name: 'agentd', version: VERSION }, { capabilities: { tools: { listChanged: false } } });
  const call = (op: string, args: Record<string, unknown>): Promise<unknown> => x.call(op, args);
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: (await agentNames(call)).map(toolOf) }));
  server.setRequestHandler(CallToolRequestSchema, (r) => callAgent(req, x, r.params.name, (r.params.arguments ?? {}) as Record<string, unknown>));
  return server;
}

/** Answers one `/mcp` request (mcp-routes.ts imports this module on the first one). */
export async function serveMcp(req: IncomingMessage, res: ServerResponse, x: HttpExchange): Promise<void> {
  const body = req.method === 'POST' ? await x.readJson() : undefined;
  const server = serverFor(req, x);
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.once('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}
