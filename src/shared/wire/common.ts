/** What every area of the wire contract shares: the protocol's own shapes and the empty map. */
import type { EndEvent, OnBusy, ToolCall, ToolChoice, Usage } from '../protocol.ts';

export type { EndEvent, OnBusy, ToolCall, ToolChoice, Usage };

/** The empty map: the argument of operations that take none, and `pong`. */
export type Empty = Record<string, never>;
