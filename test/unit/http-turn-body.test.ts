import { describe, expect, it } from 'vitest';
import { AgentdError } from '../../src/shared/errors.ts';
import { parseWith, turnBody, TurnBody } from '../../src/main/http/rest.ts';
import { HttpRouter, type HttpRoute } from '../../src/main/http/router.ts';

/** What zod alone answers: the parsed body, or the 400's message. */
function viaZod(body: Record<string, unknown>): unknown {
  try {
    return parseWith(TurnBody, body, 'body');
  } catch (err) {
    return (err as AgentdError).message;
  }
}

function viaTurnBody(body: Record<string, unknown>): unknown {
  try {
    return turnBody(body);
  } catch (err) {
    expect(err).toBeInstanceOf(AgentdError);
    return (err as AgentdError).message;
  }
}

describe('turnBody (the turn route\'s body check)', () => {
  const bodies: Record<string, unknown>[] = [
    { content: 'hello' },
    { content: 'hi', stream: true, detach: false, turn_id: 't1', on_busy: 'reject' },
    { content: 'hi', on_busy: 'later' },
    { content: 'hi', stream: 'yes' },
    { content: 7 },
    {},
    { stream: true },
    { content: 'hi', guest: 'other', ephemeral: true, correlation_id: 3 },
    { content: 'hi', correlation_id: -1 },
    { content: 'hi', extra: { nested: [1, 2] } },
    JSON.parse('{"content":"hi","__proto__":{"polluted":true}}') as Record<string, unknown>,
    { content: 'hi', toString: 'x' },
  ];
  it.each(bodies.map((b) => [JSON.stringify(b), b] as const))('answers %s as zod does', (_name, body) => {
    const expected = viaZod(body);
    expect(viaTurnBody(body)).toEqual(expected);
  });

  it('returns a copy, not the body itself', () => {
    const body = { content: 'hello' };
    const out = turnBody(body);
    expect(out).toEqual(body);
    expect(out).not.toBe(body);
  });
});

describe('HttpRouter.match', () => {
  const route = (method: HttpRoute['method'], path: string): HttpRoute => ({ method, path, summary: path, handler: async () => {} });
  const router = new HttpRouter();
  const routes = [route('GET', '/v1/agents/{agent}'), route('GET', '/v1/agents/list'), route('POST', '/v1/agents/{agent}/turns'), route('DELETE', '/v1/agents/{agent}')];
  for (const r of routes) router.mount(r);

  it('prefers the route with more literal segments, and names the parameters', () => {
    expect(router.match('GET', '/v1/agents/list')).toEqual({ route: routes[1], params: {} });
    expect(router.match('GET', '/v1/agents/a%20b')).toEqual({ route: routes[0], params: { agent: 'a b' } });
    expect(router.match('POST', '/v1/agents/x/turns')).toEqual({ route: routes[2], params: { agent: 'x' } });
  });

  it('answers the allowed methods for a path with none of its method, and null for no path', () => {
    expect(router.match('PUT', '/v1/agents/x')).toEqual({ allowed: ['GET', 'DELETE'] });
    expect(router.match('GET', '/v1/nothing/here/at/all')).toBeNull();
    expect(router.match('GET', '/v1/agents/%zz')).toBeNull();
  });

  it('sees a route replaced or mounted after a match', () => {
    const r = new HttpRouter();
    r.mount(route('GET', '/a/{x}'));
    expect(r.match('GET', '/a/1')).not.toBeNull();
    const b = route('GET', '/b/{y}');
    r.mount(b);
    expect(r.match('GET', '/b/2')).toEqual({ route: b, params: { y: '2' } });
    const a2 = route('GET', '/a/{z}');
    r.replace(a2);
    expect(r.match('GET', '/a/3')).toEqual({ route: a2, params: { z: '3' } });
  });
});
