/**
 * REST routes as data: each names its protocol operation, the zod schemas of
 * its query and body, and how the operation's arguments are built from the
 * path, the query and the body. `restRoute` turns one into an HttpRoute whose
 * handler checks the request against those same schemas, calls dispatch and
 * answers the reply value as JSON, or, for a stream, as server-sent events.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { AgentdError, Code } from '../../shared/errors.ts';
import { sendJson } from './http-io.ts';
import { pipeSse, streamFrames, streamTurn } from './sse.ts';
import type { HttpExchange, HttpMethod, HttpRoute } from './router.ts';

/** What a REST route's arguments are built from. */
export interface RestInput {
  params: Readonly<Record<string, string>>;
  query: Record<string, unknown>;
  body: Record<string, unknown>;
}

export interface RestSpec {
  method: HttpMethod;
  path: string;
  op: string;
  summary: string;
  tag: string;
  query?: z.ZodObject;
  body?: z.ZodType<Record<string, unknown>>;
  /** The operation's arguments; default: the path parameters, then the query, then the body. */
  args?: (input: RestInput) => Record<string, unknown>;
  /** The operation streams: its frames are sent as server-sent events. */
  stream?: boolean;
  /** A description of the reply (the protocol's reply variant). */
  reply: string;
}

/** A zod failure as one 400 naming the fields. */
function invalid(where: string, error: z.ZodError): AgentdError {
  const parts = error.issues.slice(0, 4).map((i) => `${[where, ...i.path.map(String)].join('.')}: ${i.message}`);
  return new AgentdError(Code.BadRequest, parts.join('; '));
}

export function parseWith<T>(schema: z.ZodType<T>, value: unknown, where: string): T {
  const r = schema.safeParse(value);
  if (!r.success) throw invalid(where, r.error);
  return r.data;
}

/** The query string as a map (a repeated key: its last value). */
function queryOf(url: URL): Record<string, string> {
  return Object.fromEntries(url.searchParams.entries());
}

function defaultArgs(input: RestInput): Record<string, unknown> {
  return { ...input.body, ...input.query, ...input.params };
}

async function inputOf(spec: RestSpec, x: HttpExchange): Promise<RestInput> {
  const query = spec.query === undefined ? {} : parseWith(spec.query, queryOf(x.url), 'query');
  const body = spec.body === undefined ? {} : parseWith(spec.body, await x.readJson(), 'body');
  return { params: x.params, query, body };
}

/** Whether the client asked for server-sent events. */
export function wantsEvents(req: IncomingMessage): boolean {
  return (req.headers.accept ?? '').toLowerCase().includes('text/event-stream');
}

/** A reply schema for the OpenAPI document: the protocol's reply value. */
function replySchema(description: string): z.ZodType {
  return z.unknown().meta({ description });
}

/**
 * An open-ended stream (`subscribe_events`, `subscribe_mcp_events`): it sends
 * nothing until something happens, so a `ping` after it is the barrier that
 * says it was accepted (a refusal comes before the pong); the headers go then.
 */
async function observe(res: ServerResponse, x: HttpExchange, op: string, args: Record<string, unknown>): Promise<void> {
  const frames = streamFrames(x.requester(), op, args);
  await x.call('ping', {});
  return pipeSse(res, frames, frames.queued === 0);
}

export function restRoute(spec: RestSpec): HttpRoute {
  const build = spec.args ?? defaultArgs;
  const route: HttpRoute = {
    method: spec.method,
    path: spec.path,
    summary: spec.summary,
    op: spec.op,
    tag: spec.tag,
    response: replySchema(spec.reply),
    handler: async (_req, res, x) => {
      const args = build(await inputOf(spec, x));
      if (spec.stream === true) return observe(res, x, spec.op, args);
      sendJson(res, 200, await x.call(spec.op, args));
    },
  };
  if (spec.query !== undefined) route.query = spec.query;
  if (spec.body !== undefined) route.body = spec.body;
  if (spec.stream === true) route.sse = 'always';
  return route;
}

/** `POST …/turns`: the turn's body; `stream` and `detach` are the HTTP door's, the rest are `stream`'s arguments (PROTOCOL §4.1). */
export const TurnBody = z.looseObject({
  content: z.string().meta({ description: 'the user message' }),
  stream: z.boolean().optional().meta({ description: 'answer with server-sent events (as Accept: text/event-stream does)' }),
  detach: z.boolean().optional().meta({ description: 'the run goes on when the client goes away, and can be joined (GET /v1/runs/{run_id}/events)' }),
  on_busy: z.enum(['enqueue', 'reject', 'interrupt']).optional(),
  turn_id: z.string().optional().meta({ description: 'the client\'s name for this turn: a retry is answered from storage' }),
  guest: z.string().optional().meta({ description: 'streamed turns only: another agent answers this one turn' }),
  ephemeral: z.boolean().optional().meta({ description: 'streamed turns only: run on a fresh history, store nothing' }),
  correlation_id: z.int().min(0).optional().meta({ description: 'streamed turns only: copied into the turn\'s agent events' }),
  tool_choice: z.union([z.string(), z.record(z.string(), z.unknown())]).optional(),
});

const ON_BUSY: ReadonlySet<unknown> = new Set(['enqueue', 'reject', 'interrupt']);
/** The body fields a plain turn carries, with the check TurnBody makes of each. */
const PLAIN_TURN_FIELDS: Readonly<Record<string, (v: unknown) => boolean>> = {
  content: (v) => typeof v === 'string',
  stream: (v) => typeof v === 'boolean',
  detach: (v) => typeof v === 'boolean',
  turn_id: (v) => typeof v === 'string',
  on_busy: (v) => ON_BUSY.has(v),
};

/**
 * A turn's body checked against TurnBody: a body of only plain fields, each
 * valid, is taken as it is (what zod would give, without its cost on every
 * turn); anything else goes through zod, for the same result or the same 400.
 */
export function turnBody(body: Record<string, unknown>): z.infer<typeof TurnBody> {
  let plain = typeof body.content === 'string';
  for (const k in body) {
    if (!Object.hasOwn(PLAIN_TURN_FIELDS, k) || !PLAIN_TURN_FIELDS[k]!(body[k])) {
      plain = false;
      break;
    }
  }
  return plain ? { ...(body as z.infer<typeof TurnBody>) } : parseWith(TurnBody, body, 'body');
}

/** A turn: one JSON reply (`send`), or its stream frames as server-sent events (`stream`) when asked. */
export function turnRoute(): HttpRoute {
  return {
    method: 'POST',
    path: '/v1/agents/{agent}/conversations/{sender}/turns',
    summary: 'Run a turn: the reply as JSON (send), or its stream as server-sent events (stream) with Accept: text/event-stream or "stream": true',
    op: 'stream',
    tag: 'turns',
    body: TurnBody,
    response: replySchema('the `response` reply of `send` (PROTOCOL §4.1); with events, one event per stream frame, `id:` its seq'),
    sse: 'optional',
    handler: async (req, res, x) => {
      const { content, stream, detach, ...options } = turnBody(await x.readJson());
      const { agent, sender } = x.params as { agent: string; sender: string };
      if (stream === true || wantsEvents(req)) {
        return pipeSse(res, streamTurn(x.requester(), { agent, sender, content, ...(detach === undefined ? {} : { detach }), options }));
      }
      const args: Record<string, unknown> = { ...options, agent, sender, content };
      if (detach !== undefined) args.detach = detach;
      sendJson(res, 200, await x.call('send', args));
    },
  };
}

/** The `seq` a join resumes after: `Last-Event-ID` (an EventSource's reconnect), else `after_seq`, else 0. */
function resumeAfter(req: IncomingMessage, x: HttpExchange): number {
  const raw = req.headers['last-event-id'] ?? x.url.searchParams.get('after_seq') ?? '0';
  const text = Array.isArray(raw) ? raw[0]! : raw;
  if (!/^\d{1,15}$/.test(text.trim())) throw new AgentdError(Code.BadRequest, `Last-Event-ID / after_seq must be a seq (a non-negative integer), got "${text}"`);
  return Number(text.trim());
}

/** `GET /v1/runs/{run_id}/events`: `join_run` as server-sent events, resumed after `Last-Event-ID`. */
export function joinRoute(): HttpRoute {
  return {
    method: 'GET',
    path: '/v1/runs/{run_id}/events',
    summary: 'Follow a detached run as server-sent events (join_run): its frames after Last-Event-ID (or after_seq), then live ones, to end',
    op: 'join_run',
    tag: 'runs',
    query: z.object({ after_seq: z.coerce.number().int().min(0).optional().meta({ description: 'the last seq seen; Last-Event-ID wins' }) }),
    response: replySchema('server-sent events: the run\'s stream frames, `id:` each frame\'s seq'),
    sse: 'always',
    handler: async (req, res, x) => {
      const args = { run_id: x.params.run_id!, after_seq: resumeAfter(req, x) };
      return pipeSse(res, streamFrames(x.requester(), 'join_run', args));
    },
  };
}
