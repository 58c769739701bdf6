/**
 * The OpenAPI 3.1 document of the HTTP door, generated from the router's
 * routes (their zod schemas through `z.toJSONSchema`), so it lists exactly
 * what is mounted: `GET /v1/openapi.json`.
 */
import { z } from 'zod';
import { VERSION } from '../../shared/version.ts';
import { isParam, type HttpRoute, type HttpRouter } from './router.ts';

type Json = Record<string, unknown>;

const ERROR = {
  type: 'object',
  required: ['error'],
  properties: { error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'integer' }, message: { type: 'string' } } } },
};

/** JSON Schema 2020-12 (OpenAPI 3.1's dialect) of a zod schema, without its `$schema` line. */
function schemaOf(schema: z.ZodType): Json {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { target: 'draft-2020-12', unrepresentable: 'any' }) as Json;
  return rest;
}

function parameters(route: HttpRoute): Json[] {
  const out: Json[] = route.path
    .split('/')
    .filter(isParam)
    .map((p) => ({ name: p.slice(1, -1), in: 'path', required: true, schema: { type: 'string' } }));
  if (route.query !== undefined) {
    const q = schemaOf(route.query) as { properties?: Record<string, Json>; required?: string[] };
    for (const [name, schema] of Object.entries(q.properties ?? {})) {
      const { description, ...rest } = schema;
      out.push({ name, in: 'query', required: q.required?.includes(name) ?? false, schema: rest, ...(description === undefined ? {} : { description }) });
    }
  }
  if (route.sse === 'always' && route.path.endsWith('/events') && route.op === 'join_run') {
    out.push({ name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string' }, description: 'the last seq seen (an EventSource sends it when it reconnects)' });
  }
  return out;
}

function responses(route: HttpRoute): Json {
  const content: Json = {};
  if (route.sse !== 'always') content['application/json'] = { schema: route.response === undefined ? {} : schemaOf(route.response) };
  if (route.sse !== undefined) content['text/event-stream'] = { schema: { type: 'string', description: 'server-sent events' } };
  const error = { description: 'an error: the status is the protocol\'s code (PROTOCOL §2)', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
  return { '200': { description: route.response?.description ?? 'the reply', content }, default: error };
}

function operationId(route: HttpRoute): string {
  const words = `${route.method} ${route.path}`.toLowerCase().replace(/[{}]/g, '').split(/[^a-z0-9]+/).filter((w) => w !== '');
  return words.map((w, i) => (i === 0 ? w : w[0]!.toUpperCase() + w.slice(1))).join('');
}

function operation(route: HttpRoute): Json {
  const op: Json = { operationId: operationId(route), summary: route.summary, tags: [route.tag ?? 'other'], parameters: parameters(route), responses: responses(route) };
  if (route.op !== undefined) op['x-agentd-operation'] = route.op;
  if (route.body !== undefined) op.requestBody = { required: true, content: { 'application/json': { schema: schemaOf(route.body) } } };
  if (route.public === true) op.security = [];
  return op;
}

/** The document for every route mounted on `router`. */
export function openApiDocument(router: HttpRouter): Json {
  const paths: Record<string, Json> = {};
  for (const route of router.routes()) {
    paths[route.path] ??= {};
    paths[route.path]![route.method.toLowerCase()] = operation(route);
  }
  return {
    openapi: '3.1.0',
    info: { title: 'agentd HTTP API', version: VERSION, description: 'The HTTP door to the agentd operations (docs/http.md, docs/PROTOCOL.md).' },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
    paths,
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } }, schemas: { Error: ERROR } },
  };
}

/** `GET /v1/openapi.json`, served without a token. */
export function openApiRoute(router: HttpRouter): HttpRoute {
  let cached: string | null = null;
  return {
    method: 'GET',
    path: '/v1/openapi.json',
    summary: 'This document',
    tag: 'daemon',
    public: true,
    response: z.record(z.string(), z.unknown()).meta({ description: 'the OpenAPI 3.1 document' }),
    handler: async (_req, res) => {
      cached ??= JSON.stringify(openApiDocument(router));
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(cached) });
      res.end(cached);
    },
  };
}
