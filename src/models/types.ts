/**
 * The provider interface every model implements. A model streams events and
 * stops at its next await once the turn is cancelled.
 */
import type { AgentConfig } from '../shared/config.ts';
import type { ToolCall, ToolChoice, Usage } from '../shared/protocol.ts';
import type { Cancellation } from '../shard/turn/cancellation.ts';
import type { Redactor } from '../shared/redact.ts';

export interface Message {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /** The agent that wrote an assistant message, when it was a guest. */
  agent?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  /** The tool's name, on a tool message. */
  name?: string;
  is_error?: boolean;
  /** Set only on the message that records a turn ended abnormally (`stalled`); never sent to a model. */
  stop_reason?: string;
}

export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export type ModelEvent =
  /**
   * `whole`, on a step's first delta only: the whole text this step's deltas
   * will add up to, when the model holds it already (echo). The loop then
   * keeps that string instead of a copy of every delta; a delta that does not
   * continue it is copied as usual.
   */
  | { type: 'text'; delta: string; whole?: string }
  | { type: 'thinking'; delta: string }
  | { type: 'tool_call'; call: ToolCall }
  | { type: 'usage'; usage: Usage };

export interface ModelRequest {
  /**
   * The conversation before this turn, oldest first: the conversation's own
   * array, passed as it is so that a long history costs a turn nothing the
   * model does not spend on it. Read it; never change it.
   */
  history: readonly Message[];
  /** This turn's messages after the history: its user message, then what the turn produced so far. */
  messages: readonly Message[];
  tools: readonly ToolSpec[];
  toolChoice: ToolChoice | null;
  agent: AgentConfig;
  /** Check `aborted` between steps; pass `cancel.signal` to anything that waits. */
  cancel: Cancellation;
  /** Set when the model is asked to summarize the history rather than to take a turn. */
  purpose?: 'compact';
}

export interface Model {
  readonly name: string;
  /** The agent's secrets, already removed from what this model yields; absent when there are none. */
  readonly redactor?: Redactor;
  stream(request: ModelRequest): AsyncIterable<ModelEvent>;
}
