/**
 * The HTTP door's route table and its mount API. Every route, REST or not
 * (the OpenAI-compatible, A2A and MCP routes mount here too), is an
 * `HttpRoute`: a method, a path pattern with `{name}` segments, a handler,
 * and the zod schemas the OpenAPI document (openapi.ts) is generated from.
 *
 *   router.mount({ method: 'POST', path: '/v1/chat/completions', summary: '…',
 *     body: MySchema, handler: async (req, res, x) => { … } });
 *
 * A handler gets the exchange (`HttpExchange`): the authenticated principal,
 * the path parameters, the JSON body reader (bounded by max_body_bytes), and
 * a requester into dispatch (`x.call(op, args)` for request-response
 * operations, `streamTurn(x.requester(), …)` / `streamFrames` / `pipeSse`
 * from sse.ts for streams). What it throws is answered as an error with the
 * protocol's code as the status.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';
import type { Principal } from '../auth/principal.ts';
import type { HttpRequester } from './http-requester.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** What a handler is given besides the request and the response. */
export interface HttpExchange {
  readonly url: URL;
  /** The path's `{name}` segments, decoded. */
  readonly params: Readonly<Record<string, string>>;
  /** Who sent it (the home token: ADMIN). */
  readonly principal: Principal;
  /** The request's requester into dispatch, made on first use and closed with the response (a closed response cancels its non-detached turns). */
  requester(): HttpRequester;
  /** A request-response operation through dispatch: its reply value, or its error thrown (AgentdError). */
  call(op: string, args: Record<string, unknown>): Promise<unknown>;
  /** The body as a JSON object (`{}` when empty), at most max_body_bytes: 400 / 413 thrown. */
  readJson(): Promise<Record<string, unknown>>;
}

export type HttpHandler = (req: IncomingMessage, res: ServerResponse, x: HttpExchange) => Promise<void>;

export interface HttpRoute {
  method: HttpMethod;
  /** `/v1/agents/{agent}`: literal segments and `{name}` parameters. */
  path: string;
  /** One line for the OpenAPI document. */
  summary: string;
  /** The protocol operation it maps to, when one (the OpenAPI operationId is derived from it). */
  op?: string;
  /** OpenAPI: the query parameters (an object of strings or coerced numbers and booleans). */
  query?: z.ZodObject;
  /** OpenAPI: the JSON request body. */
  body?: z.ZodType;
  /** OpenAPI: the JSON reply body (200). */
  response?: z.ZodType;
  /** The route answers with server-sent events (always, or when asked with Accept: text/event-stream). */
  sse?: 'always' | 'optional';
  /** Served without a bearer token (the OpenAPI document). */
  public?: boolean;
  /** OpenAPI tag (grouping). */
  tag?: string;
  handler: HttpHandler;
}

interface Compiled {
  route: HttpRoute;
  segments: readonly string[];
  /** Per segment: the parameter's name, or null for a literal. */
  names: readonly (string | null)[];
}

function compile(route: HttpRoute, segments: readonly string[]): Compiled {
  return { route, segments, names: segments.map((s) => (isParam(s) ? s.slice(1, -1) : null)) };
}

export type RouteMatch = { route: HttpRoute; params: Record<string, string> } | { allowed: HttpMethod[] } | null;

function split(path: string): string[] {
  return path.split('/').filter((s) => s !== '');
}

export function isParam(segment: string): boolean {
  return segment.startsWith('{') && segment.endsWith('}');
}

export class HttpRouter {
  readonly #routes: Compiled[] = [];
  /** The routes by segment count, in mount order (a path only ever matches routes of its length); rebuilt after a change. */
  #byLength: Map<number, Compiled[]> | null = null;

  /** Adds a route; a second route with the same method and pattern is refused. */
  mount(route: HttpRoute): void {
    const segments = split(route.path);
    const shape = segments.map((s) => (isParam(s) ? '{}' : s)).join('/');
    for (const c of this.#routes) {
      if (c.route.method === route.method && c.segments.map((s) => (isParam(s) ? '{}' : s)).join('/') === shape) {
        throw new Error(`HTTP route ${route.method} ${route.path} is mounted twice`);
      }
    }
    this.#routes.push(compile(route, segments));
    this.#byLength = null;
  }

  /**
   * Mounts `route` in place of the one with the same method and pattern (one
   * route set taking a path over from another: the OpenAI-compatible
   * `GET /v1/models`), or adds it where there is none.
   */
  replace(route: HttpRoute): void {
    const shape = (segments: readonly string[]): string => segments.map((s) => (isParam(s) ? '{}' : s)).join('/');
    const segments = split(route.path);
    const at = this.#routes.findIndex((c) => c.route.method === route.method && shape(c.segments) === shape(segments));
    if (at < 0) this.#routes.push(compile(route, segments));
    else this.#routes[at] = compile(route, segments);
    this.#byLength = null;
  }

  /** Every mounted route, in mount order. */
  routes(): readonly HttpRoute[] {
    return this.#routes.map((c) => c.route);
  }

  /** The route for a request (literal segments win over parameters), the methods the path allows (405), or null (404). */
  match(method: string, pathname: string): RouteMatch {
    let parts: string[];
    try {
      parts = split(pathname).map(decodeURIComponent);
    } catch {
      return null;
    }
    let best: { route: HttpRoute; params: Record<string, string>; literals: number } | null = null;
    const allowed = new Set<HttpMethod>();
    for (const c of this.#candidates(parts.length)) {
      const found = matchSegments(c, parts);
      if (found === null) continue;
      if (c.route.method !== method) {
        allowed.add(c.route.method);
        continue;
      }
      if (best === null || found.literals > best.literals) best = { route: c.route, params: found.params, literals: found.literals };
    }
    if (best !== null) return { route: best.route, params: best.params };
    return allowed.size > 0 ? { allowed: [...allowed] } : null;
  }

  #candidates(length: number): readonly Compiled[] {
    if (this.#byLength === null) {
      const by = new Map<number, Compiled[]>();
      for (const c of this.#routes) {
        const list = by.get(c.segments.length);
        if (list === undefined) by.set(c.segments.length, [c]);
        else list.push(c);
      }
      this.#byLength = by;
    }
    return this.#byLength.get(length) ?? [];
  }
}

function matchSegments(c: Compiled, parts: readonly string[]): { params: Record<string, string>; literals: number } | null {
  const { segments, names } = c;
  if (segments.length !== parts.length) return null;
  // Literals first, without allocating: most routes fail here.
  let literals = 0;
  for (let i = 0; i < segments.length; i++) {
    if (names[i] !== null) {
      if (parts[i] === '') return null;
    } else if (segments[i] === parts[i]) {
      literals++;
    } else {
      return null;
    }
  }
  const params: Record<string, string> = {};
  for (let i = 0; i < names.length; i++) {
    const name = names[i];
    if (name !== null && name !== undefined) params[name] = parts[i]!;
  }
  return { params, literals };
}
