/**
 * The wire contract of the live view (PROTOCOL §4.9 `get_dashboard`): one
 * snapshot of what the daemon is doing, shared by the web dashboard (served
 * on the metrics listener) and `agentctl top`.
 */
import type { Empty } from './common.ts';
import type { ClusterStats } from './admin.ts';
import type { ActiveConversation } from './conversations.ts';
import type { McpStatus } from './mcp.ts';

/** One second of ended turns. */
export interface DashboardSecond {
  /** Unix time of the second's start, in seconds. */
  t: number;
  turns: number;
  /** Of those, the ones that failed (error, stalled, refused, lost). */
  errors: number;
  /** Latency (turn reached main to its last frame) of that second's turns, milliseconds; 0 without turns. */
  p50_ms: number;
  p99_ms: number;
}

export interface DashboardShard {
  shard: number;
  running: number;
  queued: number;
}

export interface DashboardAgent {
  name: string;
  model: string;
  /** Turns ended since start (any outcome), and the failed ones among them. */
  turns: number;
  errors: number;
  mcps: number;
}

export interface DashboardError {
  /** RFC 3339. */
  time: string;
  agent: string;
  sender: string;
  /** How the turn ended: error, stalled, refused or lost. */
  code: string;
  message: string;
}

export interface DashboardMcp {
  agent: string;
  name: string;
  transport: 'stdio' | 'http';
  status: McpStatus;
  error: string;
  tool_count: number;
}

export interface Dashboard {
  /** When the snapshot was taken, RFC 3339. */
  time: string;
  version: string;
  uptime_secs: number;
  workers: number;
  connections: number;
  /** Turns ended per second over the last 10 seconds. */
  turns_per_sec: number;
  /** Latency percentiles over the last 60 seconds' turns, milliseconds (0 without turns). */
  p50_ms: number;
  p99_ms: number;
  /** Turns ended, and failed, since start. */
  turns_total: number;
  errors_total: number;
  /** The last 300 seconds, oldest first, one entry per second (the current one last). */
  series: DashboardSecond[];
  shards: DashboardShard[];
  /** Conversations in memory now: at most 20, busiest first (running, then most queued, then most messages). */
  conversations: ActiveConversation[];
  /** Of how many in memory. */
  conversations_in_memory: number;
  agents: DashboardAgent[];
  /** The latest failed turns, newest first (at most 50). */
  errors: DashboardError[];
  mcps: DashboardMcp[];
  /** Cluster mode: `get_stats`' `cluster` section; null on a single node. */
  cluster: ClusterStats | null;
}

export interface DashboardOperations {
  get_dashboard: { args: Empty; variant: 'dashboard'; reply: Dashboard };
}
