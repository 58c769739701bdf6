/**
 * The chat-completions body: the same text, byte for byte, as serializing
 * the whole request each time, while a long history's serialized prefix is
 * kept and only what was appended since is serialized; a history that was
 * replaced, cut or evicted is serialized again.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PREFIX_MIN_MESSAGES, requestBody, WirePrefixes, wireMessage } from '../../src/models/openai-wire.ts';
import type { Message, ModelRequest, ToolSpec } from '../../src/models/types.ts';
import type { ToolChoice } from '../../src/shared/protocol.ts';

const TOOLS: ToolSpec[] = [{ name: 'weather', description: 'the weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }];

function request(history: Message[], messages: Message[], opts: { system?: string; tools?: ToolSpec[]; toolChoice?: ToolChoice | null } = {}): ModelRequest {
  return {
    history,
    messages,
    tools: opts.tools ?? [],
    toolChoice: opts.toolChoice ?? null,
    agent: { model: 'gpt-test', system_prompt: opts.system ?? '' },
  } as unknown as ModelRequest;
}

/** What the body was before prefixes were kept: the whole request serialized at once. */
function wholeBody(r: ModelRequest): string {
  const messages = [...(r.agent.system_prompt === '' ? [] : [{ role: 'system', content: r.agent.system_prompt }]), ...[...r.history, ...r.messages].map(wireMessage)];
  const body: Record<string, unknown> = { model: r.agent.model, messages, stream: true, stream_options: { include_usage: true } };
  if (r.tools.length > 0) {
    body.tools = r.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
    const c = r.toolChoice;
    if (c !== null) body.tool_choice = typeof c === 'string' && !['auto', 'none', 'required'].includes(c) ? { type: 'function', function: { name: c } } : c;
  }
  return JSON.stringify(body);
}

/** A conversation's turn: a user message and a reply, appended in place as conversation.ts does past a short history. */
function turnPair(i: number): Message[] {
  return [
    { role: 'user', content: `question ${i} “quoted” \u2028 é` },
    { role: 'assistant', content: i % 3 === 0 ? '' : `answer ${i}`, ...(i % 3 === 0 ? { tool_calls: [{ id: `c${i}`, name: 'weather', arguments: '{"city":"Oslo"}' }] } : {}) },
  ];
}

function history(pairs: number): Message[] {
  return Array.from({ length: pairs }, (_, i) => turnPair(i)).flat();
}

afterEach(() => vi.restoreAllMocks());

describe('the chat-completions body', () => {
  it('is the whole request serialized, with system prompt, tool calls, tool results and tools', () => {
    const h: Message[] = [...history(3), { role: 'tool', content: 'sunny', tool_call_id: 'c0', name: 'weather' }];
    for (const opts of [{}, { system: 'be brief' }, { tools: TOOLS, toolChoice: 'weather' }, { tools: TOOLS, toolChoice: 'auto' as const }, { tools: TOOLS }]) {
      const r = request(h, [{ role: 'user', content: 'and now?' }], opts);
      expect(requestBody(r, new WirePrefixes())).toBe(wholeBody(r));
    }
    expect(requestBody(request([], [{ role: 'user', content: 'hi' }]), new WirePrefixes())).toBe(wholeBody(request([], [{ role: 'user', content: 'hi' }])));
  });

  it('serializes only what a long history gained since its last request', () => {
    const prefixes = new WirePrefixes();
    const h = history(PREFIX_MIN_MESSAGES);
    const now = [{ role: 'user' as const, content: 'next' }];
    expect(requestBody(request(h, now), prefixes)).toBe(wholeBody(request(h, now)));
    h.push(...turnPair(1000));
    const stringify = vi.spyOn(JSON, 'stringify');
    expect(requestBody(request(h, now), prefixes)).toBe(wholeBody(request(h, now)));
    // The two new history messages, the turn's message and the model name (the reference body is one call more).
    expect(stringify.mock.calls.length - 1).toBe(4);
  });

  it('serializes a history again when it was replaced, cut, or evicted', () => {
    const prefixes = new WirePrefixes(30_000);
    const now = [{ role: 'user' as const, content: 'next' }];
    const h = history(PREFIX_MIN_MESSAGES);
    requestBody(request(h, now), prefixes);
    // Cut and grown back to a longer length: its kept last message is no longer where it was.
    h.splice(10);
    h.push(...history(PREFIX_MIN_MESSAGES).map((m) => ({ ...m, content: `${m.content}!` })));
    expect(requestBody(request(h, now), prefixes)).toBe(wholeBody(request(h, now)));
    // A compaction gives the conversation a new array.
    const compacted: Message[] = [{ role: 'user', content: 'summary' }, ...history(PREFIX_MIN_MESSAGES)];
    expect(requestBody(request(compacted, now), prefixes)).toBe(wholeBody(request(compacted, now)));
    // Over the bound, the least recently used go.
    const others = Array.from({ length: 8 }, () => history(PREFIX_MIN_MESSAGES));
    for (const o of others) requestBody(request(o, now), prefixes);
    expect(prefixes.chars).toBeLessThanOrEqual(30_000);
    expect(requestBody(request(h, now), prefixes)).toBe(wholeBody(request(h, now)));
  });

  it('keeps nothing for a short history', () => {
    const prefixes = new WirePrefixes();
    requestBody(request(history(PREFIX_MIN_MESSAGES / 2 - 1), []), prefixes);
    expect(prefixes.chars).toBe(0);
  });
});
