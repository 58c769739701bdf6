/**
 * The argument and reply types of every operation (docs/PROTOCOL.md §4), in
 * one place that the client, main and worker can import. Field names are the
 * wire's (snake_case); optional fields may be absent or null on the wire.
 *
 * `Operations` maps each operation to its argument map, its reply variant and
 * that variant's value, so `request<'list_agents'>` can be typed end to end.
 */
import type { TurnOperations } from './turns.ts';
import type { ConversationOperations } from './conversations.ts';
import type { BusOperations } from './bus.ts';
import type { AgentOperations } from './agents.ts';
import type { AdminOperations } from './admin.ts';
import type { McpOperations } from './mcp.ts';
import type { ScheduleOperations } from './schedules.ts';
import type { WebhookOperations } from './webhooks.ts';
import type { RunOperations } from './runs.ts';
import type { TokenOperations } from './tokens.ts';
import type { DashboardOperations } from './dashboard.ts';
import type { TransferOperations } from './transfer.ts';

// Each area declares its own types and operations; this module is the one
// door the client, main and the shards import them through.
export type * from './common.ts';
export type * from './turns.ts';
export type * from './conversations.ts';
export type * from './bus.ts';
export type * from './agents.ts';
export type * from './admin.ts';
export type * from './mcp.ts';
export type * from './schedules.ts';
export type * from './webhooks.ts';
export type * from './runs.ts';
export type * from './tokens.ts';
export type * from './dashboard.ts';
export type * from './transfer.ts';

/** Every operation: its argument map, its reply variant and the variant's value. */
export interface Operations extends TurnOperations, ConversationOperations, BusOperations, AgentOperations, AdminOperations, McpOperations, ScheduleOperations, WebhookOperations, RunOperations, TokenOperations, DashboardOperations, TransferOperations {}

export type OperationName = keyof Operations;
export type ArgsOf<Op extends OperationName> = Operations[Op]['args'];
export type ReplyOf<Op extends OperationName> = Operations[Op]['reply'];

/** Each operation's reply variant, at run time (PROTOCOL §4's table). */
export const REPLY_VARIANT: { readonly [Op in OperationName]: Operations[Op]['variant'] } = {
  stream: 'stream',
  send: 'response',
  kill: 'pong',
  compact: 'compact',
  get_conversation_history: 'conversation_history',
  delete_conversation: 'pong',
  list_conversations: 'conversation_list',
  list_active_conversations: 'active_conversations',
  search_sessions: 'session_hits',
  subscribe_events: 'agent_event',
  close: 'pong',
  subscribe_event: 'subscription_info',
  unsubscribe_event: 'pong',
  list_subscriptions: 'subscription_list',
  publish_event: 'published',
  list_agents: 'agent_list',
  get_agent: 'agent_info',
  create_agent: 'agent_info',
  update_agent: 'agent_info',
  delete_agent: 'pong',
  rename_agent: 'agent_info',
  list_models: 'model_list',
  set_active_model: 'pong',
  list_skills: 'skill_list',
  get_skill: 'skill_body',
  ping: 'pong',
  auth: 'pong',
  get_stats: 'stats',
  get_dashboard: 'dashboard',
  reload_config: 'reloaded',
  drain: 'drained',
  list_mcps: 'mcp_list',
  upsert_mcp: 'mcp_info',
  delete_mcp: 'pong',
  reconnect_mcp: 'pong',
  subscribe_mcp_events: 'mcp_event',
  create_schedule: 'schedule',
  list_schedules: 'schedule_list',
  delete_schedule: 'pong',
  create_webhook: 'webhook',
  list_webhooks: 'webhook_list',
  delete_webhook: 'pong',
  webhook_deliveries: 'webhook_deliveries',
  get_run: 'run',
  list_runs: 'runs',
  join_run: 'stream',
  steer: 'steered',
  approve_tool: 'pong',
  create_token: 'token',
  list_tokens: 'token_list',
  revoke_token: 'pong',
  export_conversations: 'export_page',
  import_messages: 'imported',
};

export const OPERATIONS = Object.keys(REPLY_VARIANT) as OperationName[];
