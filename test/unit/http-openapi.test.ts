/**
 * The OpenAPI document of the HTTP door: generated from the mounted routes,
 * it lists each of them and nothing else, is a structurally valid OpenAPI
 * 3.1 document, and the routes cover every operation a client uses.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildRouter } from '../../src/main/http/start.ts';
import { openApiDocument } from '../../src/main/http/openapi.ts';
import { HttpRouter } from '../../src/main/http/router.ts';
import { operationNames } from '../../src/main/dispatch.ts';

type Json = Record<string, unknown>;
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

const router = buildRouter();
const doc = openApiDocument(router) as { openapi: string; info: Json; paths: Record<string, Record<string, Json>>; components: { schemas: Json; securitySchemes: Json } };

function operations(): { method: string; path: string; op: Json }[] {
  return Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ method, path, op })));
}

/** Every `$ref` anywhere under `value`. */
function refs(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) refs(v, out);
  else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string') out.push(v);
      else refs(v, out);
    }
  }
  return out;
}

describe('the OpenAPI document', () => {
  it('lists every mounted route and nothing else', () => {
    const mounted = router.routes().map((r) => `${r.method.toLowerCase()} ${r.path}`).sort();
    const documented = operations().map((o) => `${o.method} ${o.path}`).sort();
    expect(documented).toEqual(mounted);
    expect(mounted.length).toBeGreaterThan(40);
  });

  it('is structurally valid OpenAPI 3.1', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(typeof doc.info.title).toBe('string');
    expect(typeof doc.info.version).toBe('string');
    const ids = new Set<string>();
    for (const { method, path, op } of operations()) {
      expect(path.startsWith('/')).toBe(true);
      expect(METHODS).toContain(method);
      expect(typeof op.operationId).toBe('string');
      expect(ids.has(op.operationId as string)).toBe(false);
      ids.add(op.operationId as string);
      const responses = op.responses as Record<string, { description?: unknown }>;
      expect(Object.keys(responses).length).toBeGreaterThan(0);
      for (const [status, r] of Object.entries(responses)) {
        expect(status === 'default' || /^[1-5](\d\d|XX)$/.test(status)).toBe(true);
        expect(typeof r.description).toBe('string');
      }
      const params = (op.parameters ?? []) as { name: string; in: string; required?: boolean; schema?: unknown }[];
      const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      expect(params.filter((p) => p.in === 'path').map((p) => p.name).sort()).toEqual([...templated].sort());
      for (const p of params) {
        expect(['path', 'query', 'header', 'cookie']).toContain(p.in);
        if (p.in === 'path') expect(p.required).toBe(true);
        expect(typeof p.schema).toBe('object');
      }
      expect(new Set(params.map((p) => `${p.in}:${p.name}`)).size).toBe(params.length);
      const body = op.requestBody as { content?: Record<string, { schema?: Json }> } | undefined;
      if (body !== undefined) expect(body.content?.['application/json']?.schema?.type).toBe('object');
    }
    for (const ref of refs(doc)) {
      const [, , section, name] = ref.split('/');
      expect(ref.startsWith('#/components/')).toBe(true);
      expect((doc.components as Record<string, Json>)[section!]?.[name!]).toBeDefined();
    }
    expect(doc.components.securitySchemes).toEqual({ bearer: { type: 'http', scheme: 'bearer' } });
  });

  it('shows a route\'s schemas as its handler checks them', () => {
    const turn = doc.paths['/v1/agents/{agent}/conversations/{sender}/turns']!.post!;
    const schema = (turn.requestBody as { content: Record<string, { schema: { required: string[]; properties: Json } }> }).content['application/json']!.schema;
    expect(schema.required).toEqual(['content']);
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['content', 'stream', 'detach', 'on_busy', 'turn_id']));
    const search = doc.paths['/v1/search']!.get!;
    const query = search.parameters as { name: string; required: boolean }[];
    expect(query.find((p) => p.name === 'query')?.required).toBe(true);
    expect(query.find((p) => p.name === 'limit')?.required).toBe(false);
    expect(doc.paths['/v1/openapi.json']!.get!.security).toEqual([]);
  });

  it('covers every operation a client uses (auth and close are HTTP\'s own: a bearer token, a closed response)', () => {
    const routed = new Set(router.routes().map((r) => r.op).filter((op) => op !== undefined));
    routed.add('send'); // the turn route answers with send unless events are asked for
    expect(operationNames().filter((op) => !routed.has(op)).sort()).toEqual(['auth', 'close']);
  });

  it('refuses a second route with the same method and pattern', () => {
    const r = new HttpRouter();
    const handler = async (): Promise<void> => {};
    r.mount({ method: 'GET', path: '/v1/x/{a}', summary: 'x', handler });
    expect(() => r.mount({ method: 'GET', path: '/v1/x/{b}', summary: 'y', handler })).toThrow('mounted twice');
    r.mount({ method: 'GET', path: '/v1/x/literal', summary: 'z', handler });
    const m = r.match('GET', '/v1/x/literal');
    expect(m !== null && 'route' in m && m.route.summary).toBe('z');
  });
});

describe('docs/http.md and docs/http-ecosystem.md', () => {
  it('with http-ecosystem.md, lists every route, and no route that is not mounted', () => {
    const text = ['http.md', 'http-ecosystem.md'].map((f) => readFileSync(new URL(`../../docs/${f}`, import.meta.url), 'utf8')).join('\n');
    // A route is named in a table's first cell or in a heading (the ecosystem's routes: `### \`POST /v1/responses\``).
    const named = [...text.matchAll(/^(?:\| |#+ (?:[^`\n]*: )?)((?:`(?:GET|POST|PUT|PATCH|DELETE) \/[^`]*`(?:, )?)+)/gm)].flatMap((m) => [...m[1]!.matchAll(/`(\S+) (\/[^`]*)`/g)]);
    const listed = [...new Set(named.map((m) => `${m[1]} ${m[2]}`))].sort();
    expect(listed).toEqual(router.routes().map((r) => `${r.method} ${r.path}`).sort());
  });
});
