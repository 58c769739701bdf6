/** The wire contract of the agent event stream (PROTOCOL §4.4) and the event bus (§4.5). */
import type { Empty, ToolCall } from './common.ts';
import type { StopReason } from '../protocol.ts';

export type AgentEventKind =
  | 'text_start' | 'text_delta' | 'text_end'
  | 'thinking_start' | 'thinking_delta' | 'thinking_end'
  | 'tool_start' | 'tool_result' | 'tools_complete'
  | 'compacted'
  | 'done' | 'lagged' | 'chain_cut'
  | 'steered' | 'waiting';

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
  /** On run status changes (`steered`, `waiting`) and on `done`: the run. */
  run_id?: string;
  /** On `done`: how the turn ended, and its error when it failed or was cancelled. */
  stop_reason?: StopReason;
  error?: string;
}

export interface SubscribeEventsArgs {
  agent?: string;
}

export interface CloseArgs {
  request: number;
}
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
export interface BusOperations {
  subscribe_events: { args: SubscribeEventsArgs; variant: 'agent_event'; reply: AgentEvent };
  close: { args: CloseArgs; variant: 'pong'; reply: Empty };
  subscribe_event: { args: SubscribeEventArgs; variant: 'subscription_info'; reply: SubscriptionInfo };
  unsubscribe_event: { args: { id: number }; variant: 'pong'; reply: Empty };
  list_subscriptions: { args: Empty; variant: 'subscription_list'; reply: { subscriptions: SubscriptionInfo[] } };
  publish_event: { args: PublishEventArgs; variant: 'published'; reply: { fired: number } };
}
