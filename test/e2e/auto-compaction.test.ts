/** Automatic compaction: a turn whose history would pass the agent's compact_threshold compacts it first. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentdError } from '../../src/client/index.ts';
import { cleanup, collect, startDaemon, testClient, type Daemon } from '../helpers/daemon.ts';
import { types } from '../helpers/events.ts';

let d: Daemon;
beforeAll(async () => {
  d = await startDaemon({
    workers: 1,
    config: { agents: { short: { model: 'echo', compact_threshold: 30 }, never: { model: 'echo', compact_threshold: 0 }, assistant: { model: 'echo' } } },
  });
});
afterAll(() => cleanup(d));

const twenty = Array.from({ length: 20 }, (_, i) => `w${i}`).join(' ');

describe('compact_threshold', () => {
  it('compacts before the turn that would pass it, tells the stream and observers, keeps every stored message', async () => {
    const c = await testClient(d);
    const watcher = await testClient(d);
    const observed = watcher.events('short')[Symbol.asyncIterator]();
    await watcher.call('ping', {}); // a barrier: the watcher hears every turn from here on
    // 20 words in, 20 out: the model's latest call carried 40 tokens, past 30 once the next message comes.
    expect(types(await collect(c.stream('short', twenty, { sender: 'ann' })))).not.toContain('compacted');
    const evs = await collect(c.stream('short', 'and now?', { sender: 'ann' }));
    expect(types(evs).slice(0, 3)).toEqual(['start', 'compacted', 'text_start']);
    const compacted = evs[1] as { type: 'compacted'; tokens_before: number; summary: string };
    expect(compacted.tokens_before).toBe(40 + 2);
    expect(compacted.summary).toBe('2 messages; the user said: w0 w1 w2 w3 w4 w5');
    // The model saw the summary message (6 words of preamble, 11 of summary) and the new message (2), not 40 tokens of history.
    expect(evs.at(-1)).toMatchObject({ type: 'end', stop_reason: 'text', usage: { prompt_tokens: 6 + 11 + 2 } });
    const seen: { type: string; content: string }[] = [];
    while (!seen.some((e) => e.type === 'compacted')) seen.push((await observed.next()).value as { type: string; content: string });
    expect(seen.find((e) => e.type === 'compacted')!.content).toBe(compacted.summary);
    await observed.return?.(undefined);
    const history = await c.call('get_conversation_history', { agent: 'short', sender: 'ann' });
    expect(history.messages.map((m) => m.content)).toEqual([twenty, twenty, 'and now?', 'and now?']);
    c.close();
    watcher.close();
  });

  it('never compacts at 0, nor on echo by default', async () => {
    const c = await testClient(d);
    for (const agent of ['never', 'assistant']) {
      for (let i = 0; i < 3; i++) expect(types(await collect(c.stream(agent, twenty, { sender: 'bo' })))).not.toContain('compacted');
    }
    const info = await c.call('get_agent', { name: 'assistant' });
    expect(info.config.compact_threshold).toBeNull();
    c.close();
  });

  it('refuses a threshold that is not a whole number of tokens >= 0', async () => {
    const c = await testClient(d);
    for (const bad of [-1, 1.5, 'many']) {
      const err = await c.call('create_agent', { name: 'bad', config: { compact_threshold: bad as number } }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AgentdError);
      expect((err as AgentdError).code).toBe(400);
      expect((err as AgentdError).message).toContain('config.compact_threshold');
    }
    c.close();
  });
});
