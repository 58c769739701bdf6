/**
 * Shapes of PROTOCOL.md §2–4 that more than one thread needs: the turn
 * options, stream events and reply variants.
 */

export const OnBusy = ['enqueue', 'reject', 'interrupt'] as const;
export type OnBusy = (typeof OnBusy)[number];

export const StopReason = {
  Text: 'text',
  MaxIterations: 'max_iterations',
  NoAction: 'no_action',
  Cancelled: 'cancelled',
  Error: 'error',
  /** Its shard stopped answering the watchdog while it ran (PROTOCOL §6). */
  Stalled: 'stalled',
} as const;
export type StopReason = (typeof StopReason)[keyof typeof StopReason];

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cache_hit_tokens?: number;
  cache_miss_tokens?: number;
  reasoning_tokens?: number;
}

export function zeroUsage(): Usage {
  return { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
}

export interface ToolCall {
  id: string;
  name: string;
  /** JSON text, as the model produced it. */
  arguments: string;
}

/** `tool_choice` as OpenAI-compatible endpoints take it: "auto", "none", "required" or a named function. */
export type ToolChoice = string | Record<string, unknown>;

/** The body of an `end` event. */
export interface EndEvent {
  agent: string;
  error: string;
  model: string;
  usage: Usage;
  stop_reason: StopReason;
  /** Present on a retried turn answered from storage (its turn_id was stored). */
  replayed?: boolean;
  /** Present on a turn lost with its shard: whether it was stored. */
  stored?: Stored;
}

/** Whether a turn lost with its shard was stored: `unknown` when it was running and could have committed. */
export type Stored = boolean | 'unknown';

/** Longest `turn_id`, in UTF-8 bytes. */
export const MAX_TURN_ID_BYTES = 64;

/** A default sender is used when a client leaves `sender` absent or empty (PROTOCOL §3). */
export const DEFAULT_SENDER = 'user';

export const PROTOCOL_VERSION = 1;

/**
 * search_sessions bounds (PROTOCOL §4). maxQueryBytes: a query's UTF-8 size;
 * scoring compares each stored token with the query's, so a query of
 * thousands of words made one search cost billions of comparisons.
 */
export const SEARCH_LIMITS = { defaultLimit: 5, maxLimit: 20, defaultContext: 4, maxWindow: 16, snippetBytes: 1024, maxQueryBytes: 1024 } as const;

/**
 * The longest sender, event source or agent name a request may carry, in
 * bytes of UTF-8 (PROTOCOL §3): a name is a key, stored with every
 * conversation and echoed in replies and errors.
 */
export const MAX_NAME_BYTES = 256;

/** The sender prefix of the conversations the event bus runs (`event:<source>`); clients cannot write as one. */
export const BUS_SENDER_PREFIX = 'event:';
