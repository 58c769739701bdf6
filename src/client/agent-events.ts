/**
 * Events as the client yields them: one naming for both streams. A turn's
 * stream events arrive as `{<name>: {...}}` and the agent event stream's as a
 * map with a `kind` field (the wire, PROTOCOL §4.1 and §4.4); the client gives
 * both their name as `type`, so one `switch (ev.type)` reads either.
 */
import { isPlainMap } from '../shared/args.ts';
import type * as W from '../shared/wire/ops.ts';

/** An agent event's name (`text_delta`, `done`, ...). */
export type AgentEventType = W.AgentEventKind;

/** One event of the agent event stream (`events()`): the wire's fields, its `kind` named `type`. */
export type AgentEvent = Omit<W.AgentEvent, 'kind'> & { type: AgentEventType };

/** A `stream` reply body's event, or null when the body holds none. */
export function toStreamEvent(body: Record<string, unknown>): W.StreamEvent | null {
  const ev = body.stream;
  if (!isPlainMap(ev)) return null;
  const type = Object.keys(ev)[0];
  if (type === undefined) return null;
  return { type, ...(ev[type] as Record<string, unknown>) } as W.StreamEvent;
}

/** A `subscribe_events` reply body's event, or null when the body holds none. */
export function toAgentEvent(body: Record<string, unknown>): AgentEvent | null {
  const wire = body.agent_event;
  if (!isPlainMap(wire)) return null;
  const { kind, ...fields } = wire;
  return { type: kind, ...fields } as AgentEvent;
}
