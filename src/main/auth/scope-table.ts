/**
 * The scope every operation requires, and how a token bound to agents or to
 * one sender is held to its binding (docs/security.md has the same table in
 * words). Typed over every operation of the wire contract: a new operation
 * does not compile until it is given a rule here.
 */
import type { OperationName } from '../../shared/wire/ops.ts';
import type { Scope } from './principal.ts';

/**
 * How an operation meets a token's binding (its agents, its sender):
 * - `free`: names no conversation, agent or sender (allowed to any binding);
 * - `pair`: addresses one conversation: its `agent` (and `guest`) must be among the token's agents, its `sender` the token's (filled in when absent);
 * - `filter`: lists across conversations, narrowed by optional `agent` and `sender`: the token's sender is filled in (another is refused); without an `agent`, a token bound to one agent gets it filled in, one bound to several is refused;
 * - `agent`: about one agent (`field`) and no sender's content: the agent must be among the token's (filled in when optional and the token has one);
 * - `agent_events`: as `agent`, but what it answers carries every sender's content, so a token bound to a sender is refused;
 * - `run`: addresses one run by its id, whose pair is known only where the run lives: the token's binding goes along as
 *   `only_pair` (authorize() sets it, replacing any the client sent), and the shard holding the run answers a run whose
 *   pair is outside it exactly as a run it does not know (404), so a token can neither see nor probe another's runs;
 * - `unbound`: cannot be narrowed to a binding (lists of the daemon's configuration; `publish_event`): refused to any bound token.
 */
export type Binding =
  | { kind: 'free' }
  | { kind: 'pair'; guest: boolean }
  | { kind: 'filter' }
  | { kind: 'agent' | 'agent_events'; field: 'agent' | 'name'; required: boolean }
  | { kind: 'run' }
  | { kind: 'unbound' };

export interface ScopeRule {
  /** Any of these scopes grants the operation (`admin` grants everything); `any`: every token. */
  readonly scopes: readonly Scope[] | 'any';
  readonly binding: Binding;
}

const FREE: Binding = { kind: 'free' };
const PAIR: Binding = { kind: 'pair', guest: false };
const FILTER: Binding = { kind: 'filter' };
const RUN: Binding = { kind: 'run' };
const UNBOUND: Binding = { kind: 'unbound' };
const agentArg = (field: 'agent' | 'name', required: boolean, kind: 'agent' | 'agent_events' = 'agent'): Binding => ({ kind, field, required });

const ADMIN_ONLY: ScopeRule = { scopes: ['admin'], binding: FREE };
/** What can make the daemon run a program, or configure what it runs (agents, MCP servers, models, bus subscriptions, schedules, webhooks). */
const WRITE: ScopeRule = { scopes: ['agents:write'], binding: FREE };
const READ_LIST: ScopeRule = { scopes: ['read'], binding: UNBOUND };
const HISTORY: readonly Scope[] = ['read', 'chat'];

export const SCOPE_TABLE: { readonly [Op in OperationName]: ScopeRule } = {
  // Turns: chat, on the token's own conversations.
  stream: { scopes: ['chat'], binding: { kind: 'pair', guest: true } },
  send: { scopes: ['chat'], binding: PAIR },
  kill: { scopes: ['chat'], binding: PAIR },
  compact: { scopes: ['chat'], binding: PAIR },
  steer: { scopes: ['chat'], binding: PAIR },
  delete_conversation: { scopes: ['chat'], binding: PAIR },
  // History and search: read or chat.
  get_conversation_history: { scopes: HISTORY, binding: PAIR },
  list_conversations: { scopes: HISTORY, binding: FILTER },
  list_active_conversations: { scopes: HISTORY, binding: FILTER },
  search_sessions: { scopes: HISTORY, binding: FILTER },
  list_runs: { scopes: HISTORY, binding: FILTER },
  get_run: { scopes: HISTORY, binding: RUN },
  join_run: { scopes: HISTORY, binding: RUN },
  approve_tool: { scopes: ['chat'], binding: RUN },
  subscribe_events: { scopes: HISTORY, binding: agentArg('agent', false, 'agent_events') },
  // The bus: publishing is chat (it may fire turns of any subscribed agent: refused to bound tokens); subscriptions configure.
  publish_event: { scopes: ['chat'], binding: UNBOUND },
  subscribe_event: WRITE,
  unsubscribe_event: WRITE,
  list_subscriptions: READ_LIST,
  // Every token may end its own requests, ping, and authenticate.
  close: { scopes: 'any', binding: FREE },
  ping: { scopes: 'any', binding: FREE },
  auth: { scopes: 'any', binding: FREE },
  get_stats: { scopes: ['read'], binding: FREE },
  // The live view shows every conversation and error: a bound token cannot be narrowed to it.
  get_dashboard: READ_LIST,
  // Agents, models, skills.
  list_agents: READ_LIST,
  get_agent: { scopes: ['read'], binding: agentArg('name', true) },
  create_agent: WRITE,
  update_agent: WRITE,
  delete_agent: WRITE,
  list_models: { scopes: ['read'], binding: FREE },
  set_active_model: WRITE,
  list_skills: { scopes: ['read'], binding: FREE },
  get_skill: { scopes: ['read'], binding: FREE },
  // MCP servers.
  list_mcps: { scopes: ['read'], binding: agentArg('agent', false) },
  upsert_mcp: WRITE,
  delete_mcp: WRITE,
  reconnect_mcp: WRITE,
  subscribe_mcp_events: { scopes: ['read'], binding: agentArg('agent', false) },
  // Schedules and webhooks: they fire turns and send agent events out.
  create_schedule: WRITE,
  list_schedules: READ_LIST,
  delete_schedule: WRITE,
  create_webhook: WRITE,
  list_webhooks: READ_LIST,
  delete_webhook: WRITE,
  webhook_deliveries: READ_LIST,
  // Operating the daemon: its configuration and its place in the cluster.
  reload_config: ADMIN_ONLY,
  drain: ADMIN_ONLY,
  rename_agent: WRITE,
  // Export reads history (narrowed like the other lists); import writes any message into any conversation.
  export_conversations: { scopes: ['read'], binding: FILTER },
  import_messages: ADMIN_ONLY,
  // Tokens themselves: admin only.
  create_token: ADMIN_ONLY,
  list_tokens: ADMIN_ONLY,
  revoke_token: ADMIN_ONLY,
};
