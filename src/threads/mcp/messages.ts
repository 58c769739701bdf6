/**
 * Messages of the MCP thread (src/threads/mcp/mcp-thread.ts), the one thread that
 * owns every MCP connection: main manages it over the worker's own port, and
 * each shard reaches it over a MessagePort of its own (ShardInit.mcpPort).
 */
import type { MessagePort } from 'node:worker_threads';
import type { McpConfig } from '../../shared/config.ts';
import type { McpInfo, McpStatus } from '../../shared/wire/ops.ts';

export type { McpStatus };
export type McpTransport = McpInfo['transport'];

/** One (agent, server) connection as reported to main; `error` is redacted, empty when none. */
export interface McpState {
  agent: string;
  name: string;
  transport: McpTransport;
  status: McpStatus;
  error: string;
  /** The names the server's tools are offered under. */
  tools: string[];
}

/** What the MCP thread starts with (workerData). */
export interface McpThreadInit {
  logLevel: string;
  /** $AGENTD_HOME: the working directory of stdio servers. */
  home: string;
  agents: Record<string, Record<string, McpConfig>>;
}

export type ToMcpThread =
  /** Every agent's servers: entries gone or changed are stopped, new eager ones started. */
  | { type: 'configs'; agents: Record<string, Record<string, McpConfig>> }
  | { type: 'reconnect'; agent: string; name: string }
  /** A shard's port (a replacement shard gets a new one). */
  | { type: 'port'; port: MessagePort }
  | { type: 'shutdown' };

export type FromMcpThread = { type: 'ready' } | { type: 'state'; state: McpState; removed: boolean } | { type: 'closed' };

/** A tool as a shard offers it to the model. */
export interface McpToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  /** The server offering it (named in the metrics and traces of its calls). */
  server: string;
}

/** Shard -> MCP thread. `id` is unique per port; `cancel` ends the request of that id. */
export type McpRequest =
  | { type: 'tools'; id: number; agent: string }
  | { type: 'call'; id: number; agent: string; name: string; args: unknown; /** The agent's tool_timeout_ms. */ timeoutMs: number }
  | { type: 'cancel'; id: number };

/** MCP thread -> shard: one answer per `tools` or `call` request. */
export type McpAnswer =
  | { id: number; tools: McpToolSpec[] }
  | { id: number; output: string; isError: boolean }
  | { id: number; error: string };
