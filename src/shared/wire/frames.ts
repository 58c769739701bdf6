/**
 * The one place each kind of frame body is built (PROTOCOL §2, §4): an
 * operation's reply `{<variant>: <value>}`, a stream event, an error, an
 * agent event, an MCP event and the end of a closed event stream. Each builder takes the value the wire
 * contract (ops.ts) declares, so a wrong shape is a type error where it is
 * written, on main and in the shards alike.
 */
import { PONG } from '../codec.ts';
import type { WireError } from '../errors.ts';
import type { Stored } from '../protocol.ts';
import { REPLY_VARIANT, type AgentEvent, type Empty, type McpEvent, type OperationName, type Operations, type ReplyOf, type StreamEventBodies, type StreamEventName } from './ops.ts';

/** An operation's answer: its reply variant holding its reply value. */
export type ReplyBody<Op extends OperationName> = Op extends OperationName ? { readonly [V in Operations[Op]['variant']]: ReplyOf<Op> } : never;

/** One event of a `stream` turn: `{stream: {<event>: {...fields}}}`. */
export type StreamBody<E extends StreamEventName = StreamEventName> = E extends StreamEventName ? { stream: { [K in E]: StreamEventBodies[K] } } : never;

/** `stored` only on the error of a `send` lost with its worker thread (PROTOCOL §4.1, §6). */
export type ErrorBody = { error: WireError & { stored?: Stored } };
export type AgentEventBody = { agent_event: AgentEvent };
export type McpEventBody = { mcp_event: McpEvent };
/** The LAST frame of an event stream its client closed. */
export type ClosedBody = { closed: Empty };

/** Any body a request's frames may carry. */
export type FrameBody = ReplyBody<OperationName> | StreamBody | ErrorBody | AgentEventBody | McpEventBody | ClosedBody;

/** The reply of `op`; every pong is the one frozen PONG, whose bytes the codec encodes once. */
export function replyBody<Op extends OperationName>(op: Op, reply: ReplyOf<Op>): ReplyBody<Op> {
  const variant = REPLY_VARIANT[op];
  return (variant === 'pong' ? PONG : { [variant]: reply }) as ReplyBody<Op>;
}

export function streamBody<E extends StreamEventName>(event: E, body: StreamEventBodies[E]): StreamBody<E> {
  return { stream: { [event]: body } } as StreamBody<E>;
}

export function errorBody(error: ErrorBody['error']): ErrorBody {
  return { error };
}

export function agentEventBody(event: AgentEvent): AgentEventBody {
  return { agent_event: event };
}

export function mcpEventBody(event: McpEvent): McpEventBody {
  return { mcp_event: event };
}

export function closedBody(): ClosedBody {
  return { closed: {} };
}
