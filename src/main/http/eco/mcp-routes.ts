/**
 * The `/mcp` routes of the daemon as an MCP server (mcp-server.ts). The
 * MCP SDK is imported on the first request, not at start-up: it was the
 * biggest module graph a daemon loaded, and most daemons never serve MCP.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpExchange, HttpMethod, HttpRoute } from '../router.ts';

let server: Promise<typeof import('./mcp-server.ts')> | undefined;

async function serveMcp(req: IncomingMessage, res: ServerResponse, x: HttpExchange): Promise<void> {
  server ??= import('./mcp-server.ts');
  await (await server).serveMcp(req, res, x);
}

function mcpRoute(method: HttpMethod): HttpRoute {
  return {
    method,
    path: '/mcp',
    tag: 'mcp-server',
    summary: 'MCP server (Streamable HTTP, stateless): each agent as the tool ask_<agent> (docs/http-ecosystem.md)',
    handler: serveMcp,
  };
}

/** POST carries the JSON-RPC messages; GET and DELETE are answered by the SDK (405 in stateless mode). */
export function mcpRoutes(): HttpRoute[] {
  return [mcpRoute('POST'), mcpRoute('GET'), mcpRoute('DELETE')];
}
