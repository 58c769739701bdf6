import { describe, expect, it } from 'vitest';
import { countWords, EchoModel, wordChunks } from '../../src/models/echo.ts';
import type { Message, ModelEvent } from '../../src/models/types.ts';
import { Cancellation } from '../../src/shard/turn/cancellation.ts';
import { validateAgentConfig } from '../../src/shared/config-checks.ts';

describe('echo model', () => {
  it('chunks concatenate back to the message, one word per chunk', () => {
    for (const text of ['hello world', '  lead and trail  ', 'one', 'tabs\tand\nnewlines ', '   ', '', 'ünï cödé 🦀']) {
      const chunks = wordChunks(text);
      expect(chunks.join('')).toBe(text);
      if (text.trim() !== '') expect(chunks.length).toBe(countWords(text));
    }
    expect(wordChunks('hello  big world')).toEqual(['hello  ', 'big ', 'world']);
  });

  async function events(content: string): Promise<ModelEvent[]> {
    const out: ModelEvent[] = [];
    const model = new EchoModel();
    for await (const ev of model.stream({
      history: [],
      messages: [{ role: 'user', content }],
      tools: [],
      toolChoice: null,
      agent: validateAgentConfig({}, 'test', 'a'),
      cancel: new Cancellation(),
    })) out.push(ev);
    return out;
  }

  it('reports usage as words in and words out', async () => {
    const evs = await events('three little words');
    expect(evs.at(-1)).toEqual({ type: 'usage', usage: { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 } });
  });

  it('turns /call into a tool call', async () => {
    const evs = await events('/call peers {"x": 1}');
    expect(evs[0]).toEqual({ type: 'tool_call', call: { id: 'call_1_1', name: 'peers', arguments: '{"x": 1}' } });
  });

  it('streams back a user message that came after a tool result (a steer), as text even when it reads like /call', async () => {
    const messages = [
      { role: 'user' as const, content: '/call peers {}' },
      { role: 'assistant' as const, content: '', tool_calls: [{ id: 'call_1_1', name: 'peers', arguments: '{}' }] },
      { role: 'tool' as const, content: '[]', tool_call_id: 'call_1_1', name: 'peers' },
      { role: 'user' as const, content: '/call peers {}' },
    ];
    const out: ModelEvent[] = [];
    for await (const ev of new EchoModel().stream({ history: [], messages, tools: [], toolChoice: null, agent: validateAgentConfig({}, 'test', 'a'), cancel: new Cancellation() })) out.push(ev);
    expect(out.filter((e) => e.type === 'text').map((e) => (e as { delta: string }).delta).join('')).toBe('/call peers {}');
    expect(out.some((e) => e.type === 'tool_call')).toBe(false);
  });

  it('stops when aborted during a delay', async () => {
    // The longest delay allowed (1 s); the cancel comes while it runs.
    const ac = new Cancellation();
    const model = new EchoModel();
    const it = model.stream({ history: [], messages: [{ role: 'user', content: 'a b c' }], tools: [], toolChoice: null, agent: validateAgentConfig({ echo: { delay_ms: 1_000 } }, 't', 'a'), cancel: ac })[Symbol.asyncIterator]();
    const next = it.next();
    ac.cancel('stop');
    await expect(next).rejects.toThrow();
  });

  it('gives the event loop turns while it reads a conversation of many megabytes', async () => {
    const big = 'pay the invoice today '.repeat(400_000); // 8.8 MB, 1.6M words
    const history = Array.from({ length: 6 }, (_, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content: big }) as const);
    let loopTurns = 0;
    const tick = (): void => {
      loopTurns++;
      if (!done) setImmediate(tick);
    };
    let done = false;
    setImmediate(tick);
    const evs: ModelEvent[] = [];
    const model = new EchoModel();
    const request = { tools: [], toolChoice: null, agent: validateAgentConfig({}, 't', 'a'), cancel: new Cancellation() };
    for await (const ev of model.stream({ ...request, history, messages: [{ role: 'user', content: 'summarize' }], purpose: 'compact' })) evs.push(ev);
    done = true;
    // Counting 9.6M words takes far longer than one slice: the loop ran between slices.
    expect(loopTurns).toBeGreaterThan(1);
    expect(evs[0]).toEqual({ type: 'text', delta: '6 messages; the user said: pay the invoice today pay the / pay the invoice today pay the / pay the invoice today pay the' });
    expect(evs.at(-1)).toMatchObject({ type: 'usage', usage: { prompt_tokens: 6 * 1_600_000 + 1 } });
  });

  it('counts a growing history right, turn after turn, and after it is rebuilt', async () => {
    const model = new EchoModel();
    const request = { tools: [], toolChoice: null, agent: validateAgentConfig({}, 't', 'a'), cancel: new Cancellation() };
    const prompt = async (history: Message[], user: Message = { role: 'user', content: '' }): Promise<number> => {
      let tokens = -1;
      for await (const ev of model.stream({ ...request, history, messages: [user] })) if (ev.type === 'usage') tokens = ev.usage.prompt_tokens;
      return tokens;
    };
    const history: Message[] = [];
    let words = 0;
    for (let turn = 1; turn <= 50; turn++) {
      const user: Message = { role: 'user', content: 'word '.repeat(turn) };
      words += turn;
      expect(await prompt(history, user)).toBe(words);
      history.push(user, { role: 'assistant', content: 'word '.repeat(turn) });
      words += turn;
    }
    // A compacted history reuses no count: the summary replaced what came before it.
    const summary: Message = { role: 'system', content: 'two words' };
    expect(await prompt([summary, ...history.slice(-2)])).toBe(2 + 50 + 50);
    // The same messages behind another predecessor are counted again, not taken from the cache.
    expect(await prompt(history.slice(-3))).toBe(49 + 50 + 50);
  });
});
