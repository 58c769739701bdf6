/** The wire contract of agents' MCP servers (PROTOCOL §4.10). */
import type { Empty } from './common.ts';
import type { McpServerConfig } from './agents.ts';

export type McpStatus = 'disconnected' | 'connecting' | 'connected' | 'failed';

/** One MCP server of one agent, as `list_mcps` and `upsert_mcp` answer (secrets included: the operator's view). */
export interface McpInfo {
  agent: string;
  name: string;
  transport: 'stdio' | 'http';
  status: McpStatus;
  /** Why it failed or was lost; "" when none. */
  error: string;
  tool_count: number;
  tools: string[];
  config: McpServerConfig;
}

/** A status change of an MCP connection (`subscribe_mcp_events`). */
export type McpEvent = Omit<McpInfo, 'tools' | 'config'> & { timestamp: string };

/** What `upsert_mcp` takes as `config`: the server's name plus its `mcps` entry. */
export type McpUpsertConfig = McpServerConfig & { name: string };

export interface McpServerArgs {
  agent: string;
  name: string;
}

export interface McpOperations {
  list_mcps: { args: { agent?: string }; variant: 'mcp_list'; reply: { mcps: McpInfo[] } };
  upsert_mcp: { args: { agent: string; config: McpUpsertConfig }; variant: 'mcp_info'; reply: McpInfo };
  delete_mcp: { args: McpServerArgs; variant: 'pong'; reply: Empty };
  reconnect_mcp: { args: McpServerArgs; variant: 'pong'; reply: Empty };
  subscribe_mcp_events: { args: { agent?: string }; variant: 'mcp_event'; reply: McpEvent };
}
