/** The wire contract of turns (PROTOCOL §4.1): stream, send, kill, compact. */
import type { Empty, EndEvent, OnBusy, ToolCall, ToolChoice, Usage } from './common.ts';

export interface TurnArgs {
  agent: string;
  content: string;
  sender?: string;
  tool_choice?: ToolChoice;
  on_busy?: OnBusy;
  /** Names the turn so a retry is replayed from storage, not run twice (at most 64 bytes). */
  turn_id?: string;
  /** The run goes on when the connection closes (PROTOCOL §4.13). */
  detach?: boolean;
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
/** Every stream frame's event carries `seq` (1, 2, 3, … within its run); only the `end` main writes for a run lost with its worker thread has none. */
export interface StreamEventBodies {
  start: { agent: string; run_id?: string };
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
  /** The conversation was compacted before this turn: its history had passed the agent's `compact_threshold`. */
  compacted: { tokens_before: number; summary: string };
  /** A message `steer` added to the running turn, where the model sees it. */
  steered: { content: string };
  /** The model called a tool the agent's `approve_tools` names: it waits for `approve_tool`. */
  approval_required: { call_id: string; tool: string; arguments: string };
  end: EndEvent;
}

export type StreamEventName = keyof StreamEventBodies;

/** A streamed turn event as the client yields it: the event name as `type`, plus its fields. */
export type StreamEvent = { [K in StreamEventName]: { type: K; seq?: number } & StreamEventBodies[K] }[StreamEventName];

export interface SendResponse {
  agent: string;
  content: string;
  model: string;
  usage: Usage;
  /** Present on a retried turn answered from storage. */
  replayed?: boolean;
  run_id?: string;
}

export interface CompactReply {
  summary: string;
}
export interface TurnOperations {
  stream: { args: StreamArgs; variant: 'stream'; reply: Partial<StreamEventBodies> };
  send: { args: SendArgs; variant: 'response'; reply: SendResponse };
  kill: { args: KillArgs; variant: 'pong'; reply: Empty };
  compact: { args: CompactArgs; variant: 'compact'; reply: CompactReply };
}
