/**
 * The REST table: every operation a client uses, as a route (docs/http.md).
 * Path parameters name the protocol's fields (`{agent}`, `{sender}`,
 * `{run_id}`, `{name}`); query and body fields are the operation's own, so
 * PROTOCOL §4 documents them, and dispatch checks them as it does for a
 * socket. The zod schemas here are what the handlers check first and what
 * the OpenAPI document shows.
 */
import { z } from 'zod';
import { joinRoute, restRoute, turnRoute, type RestInput, type RestSpec } from './rest.ts';
import type { HttpRouter } from './router.ts';

const str = (description: string): z.ZodOptional<z.ZodString> => z.string().optional().meta({ description });
const uint = (description: string): z.ZodOptional<z.ZodCoercedNumber> => z.coerce.number().int().min(0).optional().meta({ description }) as z.ZodOptional<z.ZodCoercedNumber>;
const PAIR_FILTER = z.object({ agent: str('only this agent\'s'), sender: str('only this sender\'s') });
const PAIR = '/v1/agents/{agent}/conversations/{sender}';
const ANY_MAP = z.record(z.string(), z.unknown());

/** The pair from the path: `{agent}` and `{sender}`. */
const pair = (i: RestInput): Record<string, unknown> => ({ agent: i.params.agent, sender: i.params.sender });

const CONVERSATIONS: RestSpec[] = [
  {
    method: 'POST', path: `${PAIR}/import`, op: 'import_messages', tag: 'conversations', summary: 'Write a batch of exported messages at their positions (idempotent; PROTOCOL §4.15)', reply: 'imported',
    body: z.looseObject({ from: z.number().int().min(0), messages: z.array(ANY_MAP) }), args: (i) => ({ ...i.body, ...pair(i) }),
  },
  { method: 'GET', path: `${PAIR}/history`, op: 'get_conversation_history', tag: 'conversations', summary: 'The conversation\'s messages', reply: 'conversation_history (PROTOCOL §4.3)', args: pair },
  { method: 'DELETE', path: PAIR, op: 'delete_conversation', tag: 'conversations', summary: 'Delete the conversation', reply: 'pong: {}', args: pair },
  { method: 'POST', path: `${PAIR}/kill`, op: 'kill', tag: 'turns', summary: 'Cancel the running turn and those queued', reply: 'pong: {}', args: pair },
  {
    method: 'POST', path: `${PAIR}/compact`, op: 'compact', tag: 'conversations', summary: 'Compact the conversation\'s history', reply: 'compact (PROTOCOL §4.1)',
    body: z.object({ prompt: str('the instruction sent to the model after the history') }), args: (i) => ({ ...i.body, ...pair(i) }),
  },
  {
    method: 'POST', path: `${PAIR}/steer`, op: 'steer', tag: 'runs', summary: 'Add a message to the running turn', reply: 'steered {run_id}',
    body: z.object({ content: z.string().meta({ description: 'the message' }) }), args: (i) => ({ ...i.body, ...pair(i) }),
  },
  { method: 'GET', path: '/v1/conversations', op: 'list_conversations', tag: 'conversations', summary: 'Stored conversations', reply: 'conversation_list', query: PAIR_FILTER },
  { method: 'GET', path: '/v1/conversations/active', op: 'list_active_conversations', tag: 'conversations', summary: 'Conversations held in memory', reply: 'active_conversations', query: PAIR_FILTER },
  {
    method: 'GET', path: '/v1/search', op: 'search_sessions', tag: 'conversations', summary: 'Full-text search over stored conversations', reply: 'session_hits (PROTOCOL §4.3)',
    query: PAIR_FILTER.extend({
      query: z.string().meta({ description: 'the words to look for' }),
      limit: uint('most hits (1..20, default 5)'),
      context_before: uint('messages shown before a hit'),
      context_after: uint('messages shown after a hit'),
    }),
  },
];

const named = (i: RestInput): Record<string, unknown> => ({ name: i.params.agent });

const AGENTS: RestSpec[] = [
  { method: 'GET', path: '/v1/agents', op: 'list_agents', tag: 'agents', summary: 'Every agent', reply: 'agent_list (PROTOCOL §4.6)' },
  {
    method: 'POST', path: '/v1/agents', op: 'create_agent', tag: 'agents', summary: 'Create an agent', reply: 'agent_info',
    body: z.object({ name: z.string(), config: ANY_MAP.meta({ description: 'an agent configuration (PROTOCOL §4.6)' }) }),
  },
  { method: 'GET', path: '/v1/agents/{agent}', op: 'get_agent', tag: 'agents', summary: 'One agent', reply: 'agent_info', args: named },
  {
    method: 'PATCH', path: '/v1/agents/{agent}', op: 'update_agent', tag: 'agents', summary: 'Change an agent: the body is a JSON merge patch of its configuration', reply: 'agent_info',
    body: ANY_MAP, args: (i) => ({ name: i.params.agent, config: i.body }),
  },
  {
    method: 'POST', path: '/v1/agents/{agent}/rename', op: 'rename_agent', tag: 'agents', summary: 'Rename an agent with its conversations, subscriptions and runs', reply: 'agent_info',
    body: z.object({ new_name: z.string() }), args: (i) => ({ name: i.params.agent, new_name: i.body.new_name }),
  },
  { method: 'DELETE', path: '/v1/agents/{agent}', op: 'delete_agent', tag: 'agents', summary: 'Delete an agent and its conversations', reply: 'pong: {}', args: named },
  // `GET /v1/models` is OpenAI's (the agents, eco/openai-chat.ts); the providers' models live beside their active one.
  { method: 'GET', path: '/v1/models/available', op: 'list_models', tag: 'models', summary: 'The models the providers offer, and the active one', reply: 'model_list' },
  { method: 'PUT', path: '/v1/models/active', op: 'set_active_model', tag: 'models', summary: 'Set the active model', reply: 'pong: {}', body: z.object({ model: z.string() }) },
  { method: 'GET', path: '/v1/skills', op: 'list_skills', tag: 'skills', summary: 'Every skill', reply: 'skill_list' },
  { method: 'GET', path: '/v1/skills/{name}', op: 'get_skill', tag: 'skills', summary: 'One skill\'s body', reply: 'skill_body' },
  { method: 'GET', path: '/v1/mcps', op: 'list_mcps', tag: 'mcp', summary: 'MCP servers and their state', reply: 'mcp_list', query: z.object({ agent: str('only this agent\'s servers') }) },
  {
    method: 'PUT', path: '/v1/agents/{agent}/mcps', op: 'upsert_mcp', tag: 'mcp', summary: 'Add or replace one of the agent\'s MCP servers', reply: 'mcp_list',
    body: z.looseObject({ name: z.string() }), args: (i) => ({ agent: i.params.agent, config: i.body }),
  },
  { method: 'DELETE', path: '/v1/agents/{agent}/mcps/{name}', op: 'delete_mcp', tag: 'mcp', summary: 'Remove one of the agent\'s MCP servers', reply: 'pong: {}' },
  { method: 'POST', path: '/v1/agents/{agent}/mcps/{name}/reconnect', op: 'reconnect_mcp', tag: 'mcp', summary: 'Reconnect an MCP server', reply: 'pong: {}' },
  { method: 'GET', path: '/v1/mcps/events', op: 'subscribe_mcp_events', tag: 'mcp', summary: 'MCP status changes as server-sent events', reply: 'events: mcp_event', query: z.object({ agent: str('only this agent\'s servers') }), stream: true },
];

const RUNS: RestSpec[] = [
  {
    method: 'GET', path: '/v1/runs', op: 'list_runs', tag: 'runs', summary: 'The runs the daemon remembers, newest first', reply: 'runs (PROTOCOL §4.13)',
    query: PAIR_FILTER.extend({ status: str('only runs in this status'), limit: uint('at most this many (1..1000, default 100)') }),
  },
  { method: 'GET', path: '/v1/runs/{run_id}', op: 'get_run', tag: 'runs', summary: 'A run\'s state', reply: 'run' },
  {
    method: 'POST', path: '/v1/runs/{run_id}/approvals', op: 'approve_tool', tag: 'runs', summary: 'Approve or deny a tool call the run waits on', reply: 'pong: {}',
    body: z.object({ call_id: z.string(), approve: z.boolean(), reason: str('why it is denied') }),
  },
];

const BUS: RestSpec[] = [
  {
    method: 'POST', path: '/v1/events', op: 'publish_event', tag: 'bus', summary: 'Publish an event on the bus', reply: 'published (PROTOCOL §4.5)',
    body: z.object({ source: z.string(), payload: z.unknown().optional().meta({ description: 'a string as it is, anything else as its JSON text' }) }),
  },
  { method: 'GET', path: '/v1/events', op: 'subscribe_events', tag: 'bus', summary: 'The agent event stream as server-sent events', reply: 'events: agent_event (PROTOCOL §4.4)', query: z.object({ agent: str('only this agent\'s events') }), stream: true },
  { method: 'GET', path: '/v1/subscriptions', op: 'list_subscriptions', tag: 'bus', summary: 'Event bus subscriptions', reply: 'subscription_list' },
  {
    method: 'POST', path: '/v1/subscriptions', op: 'subscribe_event', tag: 'bus', summary: 'Subscribe an agent to a source', reply: 'subscription_info',
    body: z.object({ source: z.string(), target_agent: z.string(), once: z.boolean().optional() }),
  },
  { method: 'DELETE', path: '/v1/subscriptions/{id}', op: 'unsubscribe_event', tag: 'bus', summary: 'Remove a subscription', reply: 'pong: {}', args: (i) => ({ id: /^\d{1,15}$/.test(i.params.id!) ? Number(i.params.id) : i.params.id }) },
];

const ADMIN_OPS: RestSpec[] = [
  { method: 'GET', path: '/v1/ping', op: 'ping', tag: 'daemon', summary: 'Liveness', reply: 'pong: {}' },
  { method: 'GET', path: '/v1/stats', op: 'get_stats', tag: 'daemon', summary: 'The daemon\'s statistics', reply: 'stats (PROTOCOL §4.9)' },
  { method: 'GET', path: '/v1/schedules', op: 'list_schedules', tag: 'schedules', summary: 'Every schedule', reply: 'schedule_list' },
  { method: 'POST', path: '/v1/schedules', op: 'create_schedule', tag: 'schedules', summary: 'Create a schedule (PROTOCOL §4.11)', reply: 'schedule', body: z.looseObject({ name: z.string(), source: z.string() }) },
  { method: 'DELETE', path: '/v1/schedules/{name}', op: 'delete_schedule', tag: 'schedules', summary: 'Delete a schedule', reply: 'pong: {}' },
  { method: 'GET', path: '/v1/webhooks', op: 'list_webhooks', tag: 'webhooks', summary: 'Every webhook, without secrets', reply: 'webhook_list' },
  {
    method: 'POST', path: '/v1/webhooks', op: 'create_webhook', tag: 'webhooks', summary: 'Create a webhook (PROTOCOL §4.12)', reply: 'webhook',
    body: z.looseObject({ name: z.string(), url: z.string(), events: z.array(z.string()), secret: z.string() }),
  },
  { method: 'DELETE', path: '/v1/webhooks/{name}', op: 'delete_webhook', tag: 'webhooks', summary: 'Delete a webhook and its deliveries', reply: 'pong: {}' },
  {
    method: 'GET', path: '/v1/webhooks/{name}/deliveries', op: 'webhook_deliveries', tag: 'webhooks', summary: 'A webhook\'s deliveries', reply: 'webhook_deliveries',
    query: z.object({ status: str('pending, delivered or failed'), limit: uint('1 to 1000 (default 100)') }),
  },
  { method: 'POST', path: '/v1/reload', op: 'reload_config', tag: 'daemon', summary: 'Read agentd.json again and apply what can change live (as SIGHUP)', reply: 'reloaded (PROTOCOL §4.9)' },
  { method: 'POST', path: '/v1/drain', op: 'drain', tag: 'daemon', summary: 'Cluster mode: hand this node\'s partitions to the others; answers once it serves none', reply: 'drained (PROTOCOL §4.9)' },
  {
    method: 'GET', path: '/v1/export', op: 'export_conversations', tag: 'conversations', summary: 'One page of stored conversations as export records (PROTOCOL §4.15)', reply: 'export_page',
    query: z.object({ agent: str('only this agent\'s'), sender: str('only this sender\'s'), after: str('the `next` of the page before'), limit: uint('records in the page, 1-1000 (default 500)') }),
  },
  { method: 'GET', path: '/v1/dashboard', op: 'get_dashboard', tag: 'daemon', summary: 'The live view: turn rates and latency, shards, busiest conversations, errors, MCP servers, cluster', reply: 'dashboard (PROTOCOL §4.9)' },
  { method: 'GET', path: '/v1/tokens', op: 'list_tokens', tag: 'tokens', summary: 'Scoped tokens, without secrets', reply: 'tokens (PROTOCOL §4.14)' },
  {
    method: 'POST', path: '/v1/tokens', op: 'create_token', tag: 'tokens', summary: 'Create a scoped token: its secret is shown once (PROTOCOL §4.14)', reply: 'token',
    body: z.object({ scopes: z.array(z.string()), agents: z.array(z.string()).optional(), sender: z.string().optional(), label: z.string().optional() }),
  },
  { method: 'DELETE', path: '/v1/tokens/{id}', op: 'revoke_token', tag: 'tokens', summary: 'Revoke a token at once', reply: 'pong: {}' },
];

/** Every REST route of the table. */
export const REST_SPECS: readonly RestSpec[] = [...CONVERSATIONS, ...AGENTS, ...RUNS, ...BUS, ...ADMIN_OPS];

/** Mounts the REST API: the turn route, the run join, and the table. */
export function mountRest(router: HttpRouter): void {
  router.mount(turnRoute());
  router.mount(joinRoute());
  for (const spec of REST_SPECS) router.mount(restRoute(spec));
}
