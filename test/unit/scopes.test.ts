/**
 * Authorization: every operation dispatch serves has a scope rule, and a
 * token's scopes and binding are enforced as docs/security.md says.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { operationNames } from '../../src/main/dispatch.ts';
import { SCOPE_TABLE, type ScopeRule } from '../../src/main/auth/scope-table.ts';
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
    expect(code(() => authorize(alice, 'publish_event', { source: 's' }))).toBe(403);
    expect(code(() => authorize(alice, 'subscribe_events', { agent: 'assistant' }))).toBe(403);
    expect(authorize(token(['read'], ['assistant']), 'subscribe_events', {})).toEqual({ agent: 'assistant' });
    expect(code(() => authorize(token(['read'], null, 'alice'), 'list_agents', {}))).toBe(403);
  });

  it('sends a run request on with the token\'s binding as only_pair, replacing whatever the client put there', () => {
    const own = { agents: ['assistant'], sender: 'alice' };
    for (const op of ['get_run', 'join_run', 'approve_tool'] as const) {
      expect(authorize(alice, op, { run_id: 'r1' })).toEqual({ run_id: 'r1', only_pair: own });
      expect(authorize(alice, op, { run_id: 'r1', only_pair: null })).toEqual({ run_id: 'r1', only_pair: own });
      expect(authorize(alice, op, { run_id: 'r1', only_pair: { agents: null, sender: 'bob' } })).toEqual({ run_id: 'r1', only_pair: own });
    }
    expect(authorize(token(['read'], null, 'alice'), 'get_run', { run_id: 'r1', only_pair: {} })).toEqual({ run_id: 'r1', only_pair: { agents: null, sender: 'alice' } });
    expect(authorize(token(['read'], ['a', 'b']), 'join_run', { run_id: 'r1' })).toEqual({ run_id: 'r1', only_pair: { agents: ['a', 'b'], sender: null } });
    expect(code(() => authorize(token(['read'], ['a'], 'alice'), 'approve_tool', { run_id: 'r1' }))).toBe(403); // the scope still comes first
    // Admin and unbound tokens: untouched (a client's only_pair there only narrows what it asks for).
    const args = { run_id: 'r1', only_pair: { sender: 'x' } };
    expect(authorize(token(['chat']), 'get_run', args)).toBe(args);
    expect(authorize(ADMIN, 'approve_tool', args)).toBe(args);
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

/** docs/security.md's words for a rule's bound-token column. */
function boundWords(rule: ScopeRule): string {
  const b = rule.binding;
  switch (b.kind) {
    case 'free':
      return rule.scopes !== 'any' && rule.scopes.every((s) => s === 'admin' || s === 'agents:write') ? '—' : 'allowed';
    case 'pair':
      return `its \`agent\` in the list; its \`sender\` the token's (filled in when absent)${b.guest ? '; its `guest` in the list' : ''}`;
    case 'filter':
      return "narrowed: the token's sender filled in; its one agent filled in, else `agent` must name one in the list";
    case 'agent':
      return b.required ? 'its agent in the list' : 'its agent in the list (filled in when the token has one)';
    case 'agent_events':
      return 'its agent in the list (filled in when the token has one); refused to a token bound to a sender';
    case 'run':
      return "the run's `agent` in the list and its `sender` the token's, checked where the run lives; else 404, as for no such run";
    case 'unbound':
      return 'refused';
  }
}

describe('docs/security.md', () => {
  it('has the scope table\'s row for every operation, in its words, and no other', () => {
    const doc = readFileSync(resolve(import.meta.dirname, '../../docs/security.md'), 'utf8');
    const start = doc.indexOf('| operation | scopes that grant it');
    const table = doc.slice(start, doc.indexOf('\n\n', start));
    const rows = new Map([...table.matchAll(/^\| `([a-z_]+)` \| (.+?) \| (.+?) \|$/gm)].map((m) => [m[1]!, [m[2]!, m[3]!]]));
    expect([...rows.keys()].sort()).toEqual(operationNames().sort());
    for (const [op, rule] of Object.entries(SCOPE_TABLE)) {
      const scopes = rule.scopes === 'any' ? 'any' : rule.scopes.map((s) => `\`${s}\``).join(' or ');
      expect(rows.get(op), op).toEqual([scopes, boundWords(rule)]);
    }
  });
});
