/**
 * The argument and reply types of every operation (docs/PROTOCOL.md §4), in
 * one place that the client, main and worker can import. Field names are the
 * wire's (snake_case); optional fields may be absent or null on the wire.
 *
 * `Operations` maps each operation to its argument map, its reply variant and
 * that variant's value, so `request<'list_agents'>` can be typed end to end.
 */
import type { EndEvent, OnBusy, ToolCall, ToolChoice, Usage } from '../protocol.ts';
import type { AgentConfig, HarnessConfig, McpConfig } from '../config.ts';

export type { EndEvent, OnBusy, ToolCall, ToolChoice, Usage };

/** The empty map: the argument of operations that take none, and `pong`. */
export type Empty = Record<string, never>;

// ---- §4.1 turns -------------------------------------------------------------

export interface TurnArgs {
  agent: string;
  content: string;
  sender?: string;
  tool_choice?: ToolChoice;
  on_busy?: OnBusy;
  /** Names the turn so a retry is replayed from storage, not run twice (at most 64 bytes). */
  turn_id?: string;
}

export interface StreamArgs extends TurnArgs {
  guest?: string;
  ephemeral?: boolean;
  correlation_id?: number;
}

export type SendArgs = TurnArgs;

/** A conversation's address (PROTOCOL §3). */
export interface PairArgs {
  agent: string;
  sender?: string;
}

export type KillArgs = PairArgs;

export interface CompactArgs extends PairArgs {
  prompt?: string;
}

/** One `stream` frame's value: `{<event>: {...fields}}`. */
export interface StreamEventBodies {
  start: { agent: string };
  text_start: { agent: string };
  text_end: { agent: string };
  chunk: { content: string };
  thinking_start: { agent: string };
  thinking_end: { agent: string };
  thinking: { content: string };
  context_usage: { usage: Usage };
  tool_start: { calls: ToolCall[] };
  tool_result: { call_id: string; output: string; duration_ms: number; is_error: boolean };
  tools_complete: Empty;
  end: EndEvent;
}

export type StreamEventName = keyof StreamEventBodies;

/** A streamed turn event as the client yields it: the event name as `type`, plus its fields. */
export type StreamEvent = { [K in StreamEventName]: { type: K } & StreamEventBodies[K] }[StreamEventName];

export interface SendResponse {
  agent: string;
  content: string;
  model: string;
  usage: Usage;
  /** Present on a retried turn answered from storage. */
  replayed?: boolean;
}

export interface CompactReply {
  summary: string;
}

// ---- §4.3 conversations and search ------------------------------------------

export interface HistoryMessage {
  role: 'user' | 'assistant' | 'tool';
  content: string;
  /** Present only on messages a guest wrote. */
  agent?: string;
}

export interface ConversationHistory {
  agent: string;
  sender: string;
  title: string;
  messages: HistoryMessage[];
}

export interface ConversationFilter {
  agent?: string;
  sender?: string;
}

export interface ConversationSummary {
  agent: string;
  sender: string;
  title: string;
  message_count: number;
  created_at: string;
  updated_at: string;
}

export interface ActiveConversation {
  agent: string;
  sender: string;
  message_count: number;
  alive_secs: number;
  title: string;
  running: boolean;
  queued: number;
  /** Approximate bytes its history holds in memory (counted against `memory_bytes`). */
  memory_bytes: number;
}

export interface SearchArgs {
  query: string;
  limit?: number;
  context_before?: number;
  context_after?: number;
  agent?: string;
  sender?: string;
}

export interface SearchWindowMessage {
  role: 'user' | 'assistant' | 'tool';
  msg_idx: number;
  snippet: string;
  truncated: boolean;
  tool_name: string;
}

export interface SessionHit {
  agent: string;
  sender: string;
  title: string;
  msg_idx: number;
  score: number;
  created_at: string;
  updated_at: string;
  window: SearchWindowMessage[];
}

// ---- §4.4 the agent event stream ---------------------------------------------

export type AgentEventKind =
  | 'text_start' | 'text_delta' | 'text_end'
  | 'thinking_start' | 'thinking_delta' | 'thinking_end'
  | 'tool_start' | 'tool_result' | 'tools_complete'
  | 'done' | 'lagged' | 'chain_cut';

/** One event of the agent event stream (`subscribe_events`). */
export interface AgentEvent {
  agent: string;
  sender: string;
  kind: AgentEventKind;
  content: string;
  timestamp: string;
  tool_calls?: ToolCall[];
  tool_output?: string;
  tool_is_error?: boolean;
  ephemeral: boolean;
  correlation_id?: number;
}

export interface SubscribeEventsArgs {
  agent?: string;
}

export interface CloseArgs {
  request: number;
}

// ---- §4.5 the event bus -------------------------------------------------------

export interface SubscribeEventArgs {
  source: string;
  target_agent: string;
  once?: boolean;
}

export interface SubscriptionInfo {
  id: number;
  source: string;
  target_agent: string;
  once: boolean;
}

export interface PublishEventArgs {
  source: string;
  /** A string is the fired turns' user message as it is; anything else becomes its JSON text. */
  payload?: unknown;
}

// ---- §4.6 agents ----------------------------------------------------------------

// The agent configuration is defined once, where it is validated (src/shared/config.ts).
export type { AgentConfig, HarnessConfig, McpConfig };
/** One MCP server's settings, as `mcps` and `upsert_mcp` take them. */
export type McpServerConfig = McpConfig;

/** What `create_agent` takes: any subset of the configuration. */
export type AgentConfigInput = Partial<AgentConfig>;

/** What `update_agent` takes: a JSON merge patch (null removes a key). */
export type AgentConfigPatch = { [K in keyof AgentConfig]?: AgentConfig[K] | null | Record<string, unknown> };

export interface AgentInfo {
  name: string;
  description: string;
  model: string;
  max_iterations: number;
  thinking: boolean;
  skills: string[];
  mcps: string[];
  /** Empty wherever a harness receives it (PROTOCOL §5). */
  config: AgentConfig | Empty;
}

export interface NameArgs {
  name: string;
}

// ---- §4.7 models, §4.8 skills, §4.9 the daemon ---------------------------------

export interface ModelInfo {
  name: string;
  active: boolean;
}

export interface SkillInfo {
  name: string;
  description: string;
}

export interface SkillBody {
  name: string;
  body: string;
}

export interface Stats {
  version: string;
  uptime_secs: number;
  active_conversations: number;
  /** Approximate bytes the histories of the conversations in memory hold, all shards together. */
  conversation_bytes: number;
  registered_agents: number;
  active_model: string;
  workers: number;
  subscriptions: number;
  connections: number;
  /** Open connections per listener. */
  connections_by_listener: { unix: number; tcp: number };
  /** Connections refused with 429 since start, per listener. */
  refused_connections: { unix: number; tcp: number };
  /** TCP connections not authenticated yet, and those closed to make room for newer ones (PROTOCOL §6). */
  unauthenticated_connections: number;
  unauthenticated_evicted: number;
  /** Open `subscribe_events` streams, all connections together. */
  observers: number;
  /** Fired turns dropped because their chain reached `max_chain_turns`, since start. */
  chain_turns_dropped: number;
  /** Worker threads replaced because they stopped answering, since start. */
  shard_stalls: number;
  /** Fired turns dropped because their conversation's queue was full, since start. */
  queued_turns_dropped: number;
  /** Output buffers main handed back to their shard for reuse once written, since start. */
  output_buffers_returned: number;
  /** search_sessions requests not yet answered (waiting or running), and since start those answered 504 or cancelled (PROTOCOL §4.3). */
  searches_in_progress: number;
  searches_timed_out: number;
  searches_cancelled: number;
  /** The configured limits in force, each answered with 429 when reached. */
  limits: Record<string, number>;
  /** Cluster mode only (absent on a single node). */
  cluster?: ClusterStats;
}

/** One node as the answering node sees it in the cluster's bucket. */
export interface ClusterNodeStats {
  node: string;
  /** Counted live now (its last heartbeat is younger than `lease_ms`; for the answering node, its own lease is valid). */
  live: boolean;
  /** Partitions the bucket records it as owning. */
  partitions: number;
  /** Milliseconds since the answering node saw its last heartbeat (its lease's age). */
  lease_age_ms: number;
}

/** `get_stats`' `cluster` section. */
export interface ClusterStats {
  name: string;
  node: string;
  partitions: number;
  lease_ms: number;
  live_nodes: string[];
  /** Every node with a heartbeat in the bucket, sorted by name. */
  nodes: ClusterNodeStats[];
  /** Partitions no node owns in the bucket now. */
  unowned_partitions: number;
  served_partitions: number;
  /** Milliseconds this node may still serve without another acknowledged heartbeat (0: it serves nothing). */
  lease_left_ms: number;
  /** Requests forwarded to other nodes (each try), since start. */
  forwarded: number;
  /** Requests run here for other nodes, since start. */
  served_for_others: number;
  /** Requests held while their partition changed hands, since start. */
  held: number;
}

// ---- §4.10 MCP servers -----------------------------------------------------------

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

// ---- the table -----------------------------------------------------------------

/** Every operation: its argument map, its reply variant and the variant's value. */
export interface Operations {
  stream: { args: StreamArgs; variant: 'stream'; reply: Partial<StreamEventBodies> };
  send: { args: SendArgs; variant: 'response'; reply: SendResponse };
  kill: { args: KillArgs; variant: 'pong'; reply: Empty };
  compact: { args: CompactArgs; variant: 'compact'; reply: CompactReply };
  get_conversation_history: { args: PairArgs; variant: 'conversation_history'; reply: ConversationHistory };
  delete_conversation: { args: PairArgs; variant: 'pong'; reply: Empty };
  list_conversations: { args: ConversationFilter; variant: 'conversation_list'; reply: { conversations: ConversationSummary[] } };
  list_active_conversations: { args: ConversationFilter; variant: 'active_conversations'; reply: { conversations: ActiveConversation[] } };
  search_sessions: { args: SearchArgs; variant: 'session_hits'; reply: { hits: SessionHit[] } };
  subscribe_events: { args: SubscribeEventsArgs; variant: 'agent_event'; reply: AgentEvent };
  close: { args: CloseArgs; variant: 'pong'; reply: Empty };
  subscribe_event: { args: SubscribeEventArgs; variant: 'subscription_info'; reply: SubscriptionInfo };
  unsubscribe_event: { args: { id: number }; variant: 'pong'; reply: Empty };
  list_subscriptions: { args: Empty; variant: 'subscription_list'; reply: { subscriptions: SubscriptionInfo[] } };
  publish_event: { args: PublishEventArgs; variant: 'published'; reply: { fired: number } };
  list_agents: { args: Empty; variant: 'agent_list'; reply: { agents: AgentInfo[] } };
  get_agent: { args: NameArgs; variant: 'agent_info'; reply: AgentInfo };
  create_agent: { args: { name: string; config: AgentConfigInput }; variant: 'agent_info'; reply: AgentInfo };
  update_agent: { args: { name: string; config: AgentConfigPatch }; variant: 'agent_info'; reply: AgentInfo };
  delete_agent: { args: NameArgs; variant: 'pong'; reply: Empty };
  list_models: { args: Empty; variant: 'model_list'; reply: { models: ModelInfo[] } };
  set_active_model: { args: { model: string }; variant: 'pong'; reply: Empty };
  list_skills: { args: Empty; variant: 'skill_list'; reply: { skills: SkillInfo[] } };
  get_skill: { args: NameArgs; variant: 'skill_body'; reply: SkillBody };
  ping: { args: Empty; variant: 'pong'; reply: Empty };
  auth: { args: { token: string }; variant: 'pong'; reply: Empty };
  get_stats: { args: Empty; variant: 'stats'; reply: Stats };
  list_mcps: { args: { agent?: string }; variant: 'mcp_list'; reply: { mcps: McpInfo[] } };
  upsert_mcp: { args: { agent: string; config: McpUpsertConfig }; variant: 'mcp_info'; reply: McpInfo };
  delete_mcp: { args: McpServerArgs; variant: 'pong'; reply: Empty };
  reconnect_mcp: { args: McpServerArgs; variant: 'pong'; reply: Empty };
  subscribe_mcp_events: { args: { agent?: string }; variant: 'mcp_event'; reply: McpEvent };
}

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
  list_models: 'model_list',
  set_active_model: 'pong',
  list_skills: 'skill_list',
  get_skill: 'skill_body',
  ping: 'pong',
  auth: 'pong',
  get_stats: 'stats',
  list_mcps: 'mcp_list',
  upsert_mcp: 'mcp_info',
  delete_mcp: 'pong',
  reconnect_mcp: 'pong',
  subscribe_mcp_events: 'mcp_event',
};

export const OPERATIONS = Object.keys(REPLY_VARIANT) as OperationName[];
