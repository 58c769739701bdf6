/**
 * Authorization: every operation dispatch serves has a scope rule, and a
 * token's scopes and binding are enforced as docs/security.md says.
 */
import { describe, expect, it } from 'vitest';
import { operationNames } from '../../src/main/dispatch.ts';
import { SCOPE_TABLE } from '../../src/main/auth/scope-table.ts';
import { authorize, guardedDispatch } from '../../src/main/auth/authorize.ts';
import { ADMIN, type Principal, type Scope } from '../../src/main/auth/principal.ts';
import type { Requester } from '../../src/main/dispatch.ts';

const token = (scopes: Scope[], agents: string[] | null = null, sender: string | null = null): Principal => ({ scopes, agents, sender, tokenId: 'abc' });
const code = (fn: () => unknown): number | null => {
  try {
    fn();
    return null;
  } catch (err) {
    return (err as { code: number }).code;
  }
};

describe('the scope table', () => {
  it('gives every operation dispatch serves a rule, and names no other', () => {
    expect(Object.keys(SCOPE_TABLE).sort()).toEqual(operationNames().sort());
  });

  it('leaves the token operations to admin alone', () => {
    for (const op of ['create_token', 'list_tokens', 'revoke_token'] as const) expect(SCOPE_TABLE[op].scopes).toEqual(['admin']);
  });

  it('puts every operation that can make the daemon run a program under agents:write', () => {
    for (const op of ['create_agent', 'update_agent', 'delete_agent', 'upsert_mcp', 'delete_mcp', 'reconnect_mcp', 'set_active_model'] as const) {
      expect(SCOPE_TABLE[op].scopes).toEqual(['agents:write']);
    }
  });
});

describe('authorize', () => {
  const alice = token(['chat'], ['assistant'], 'alice');

  it('lets admin do everything, arguments untouched', () => {
    for (const op of operationNames()) {
      const args = { agent: 'x' };
      expect(authorize(ADMIN, op as never, args)).toBe(args);
    }
  });

  it('refuses an operation outside the scopes with 403 naming the scope', () => {
    expect(() => authorize(alice, 'create_agent', { name: 'x', config: {} })).toThrow(/lacks the "agents:write" scope: create_agent needs it/);
    expect(code(() => authorize(alice, 'upsert_mcp', { agent: 'assistant', config: {} }))).toBe(403);
    expect(code(() => authorize(token(['read']), 'stream', { agent: 'a', content: 'hi' }))).toBe(403);
    expect(() => authorize(token(['agents:write']), 'get_conversation_history', { agent: 'a' })).toThrow(/lacks the "read" or "chat" scope/);
    expect(code(() => authorize(token(['read']), 'list_tokens', {}))).toBe(403);
  });

  it('fills in the bound sender, and refuses another sender or agent', () => {
    expect(authorize(alice, 'stream', { agent: 'assistant', content: 'hi' })).toEqual({ agent: 'assistant', content: 'hi', sender: 'alice' });
    expect(authorize(alice, 'stream', { agent: 'assistant', sender: 'alice', content: 'hi' })).toEqual({ agent: 'assistant', sender: 'alice', content: 'hi' });
    expect(() => authorize(alice, 'get_conversation_history', { agent: 'assistant', sender: 'bob' })).toThrow(/only as sender "alice", not "bob"/);
    expect(() => authorize(alice, 'stream', { agent: 'other', content: 'hi' })).toThrow(/may not address agent "other"/);
    expect(code(() => authorize(alice, 'stream', { agent: 'assistant', guest: 'other', content: 'hi' }))).toBe(403);
  });

  it('narrows lists to the binding, or refuses what it cannot narrow', () => {
    expect(authorize(alice, 'list_conversations', {})).toEqual({ sender: 'alice', agent: 'assistant' });
    expect(authorize(alice, 'search_sessions', { query: 'q' })).toEqual({ query: 'q', sender: 'alice', agent: 'assistant' });
    const two = token(['chat'], ['a', 'b']);
    expect(code(() => authorize(two, 'list_runs', {}))).toBe(403);
    expect(authorize(two, 'list_runs', { agent: 'b' })).toEqual({ agent: 'b' });
    for (const op of ['get_run', 'join_run', 'approve_tool', 'publish_event'] as const) expect(code(() => authorize(alice, op, { run_id: 'r', source: 's' }))).toBe(403);
    expect(code(() => authorize(alice, 'subscribe_events', { agent: 'assistant' }))).toBe(403);
    expect(authorize(token(['read'], ['assistant']), 'subscribe_events', {})).toEqual({ agent: 'assistant' });
    expect(code(() => authorize(token(['read'], null, 'alice'), 'list_agents', {}))).toBe(403);
  });

  it('an unbound chat token addresses any pair as any sender', () => {
    const args = { agent: 'x', sender: 'bob', content: '' };
    expect(authorize(token(['chat']), 'stream', args)).toBe(args);
  });
});

describe('guardedDispatch', () => {
  function run(principal: Principal | undefined, body: Record<string, unknown>) {
    const passed: Record<string, unknown>[] = [];
    const replies: unknown[] = [];
    const from: Requester = { id: 1, principal, reply: (_req, value) => replies.push(value), backlog: () => 0, write: () => {} };
    guardedDispatch((_from, _req, b) => passed.push(b))(from, 7, body);
    return { passed, replies };
  }

  it('passes what the token may do (rewritten), answers 403 for the rest, and leaves malformed requests to dispatch', () => {
    const alice = token(['chat'], ['assistant'], 'alice');
    expect(run(alice, { send: { agent: 'assistant', content: 'x' } }).passed).toEqual([{ send: { agent: 'assistant', content: 'x', sender: 'alice' } }]);
    const refused = run(alice, { create_agent: { name: 'n', config: {} } });
    expect(refused.passed).toEqual([]);
    expect(refused.replies).toEqual([{ error: { code: 403, message: expect.stringMatching(/agents:write/) } }]);
    expect(run(alice, { nope: {} }).passed).toHaveLength(1);
    expect(run(undefined, { create_agent: {} }).passed).toHaveLength(1);
  });
});
