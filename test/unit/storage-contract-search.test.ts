/**
 * The storage contract's search (PROTOCOL §4.3), the same tests for every
 * backend: ranking, what is never searchable, windows, snippets, filters
 * and the candidate bounds. Each test gets a store of its own.
 */
import { describe, expect, it } from 'vitest';
import type { Message } from '../../src/models/types.ts';
import { SEARCH_CANDIDATES } from '../../src/storage/search-rules.ts';
import { assistant, backends, contractFixture, ref, user } from '../helpers/storage-contract.ts';

describe.each(backends)('storage contract, search: $name', (backend) => {
  const f = contractFixture(backend);
  if (f === null) return;
  describe('search', () => {
    it('finds one hit per conversation, best first, user text above assistant text', async () => {
      await f.fresh();
      await f.conversation('a', 'one', [user('the kiwi is a bird'), assistant('yes'), user('kiwi kiwi kiwi'), assistant('ok')]);
      await f.conversation('a', 'two', [user('a long message about many things and once a kiwi somewhere in it among other words'), assistant('fine')]);
      const hits = await f.q('kiwi');
      expect(hits.map((h) => h.sender)).toEqual(['one', 'two']);
      expect(hits[0]!.msg_idx).toBe(2);
      expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
      await f.conversation('b', 'in-assistant', [user('hello'), assistant('mango')]);
      await f.conversation('b', 'in-user', [user('mango'), assistant('hello')]);
      expect((await f.q('mango')).map((h) => h.sender)).toEqual(['in-user', 'in-assistant']);
    });

    it('a match in the title or the compaction summary lifts a conversation', async () => {
      await f.fresh();
      await f.conversation('a', 'lifted', [user('papaya notes'), assistant('ok')]);
      await f.conversation('a', 'plain', [user('hello'), assistant('ok'), user('papaya notes')]);
      expect((await f.q('papaya'))[0]!.sender).toBe('lifted');
      const viaSummary = await f.conversation('a', 'summary', [user('hello'), assistant('ok'), user('papaya notes')]);
      await f.shard.setSummary(viaSummary, 'all about papaya papaya', 3);
      const order = (await f.q('papaya')).map((h) => h.sender);
      expect(order.indexOf('summary')).toBeLessThan(order.indexOf('plain'));
    });

    it('never finds tool output or tool-call arguments, but finds tool names', async () => {
      await f.fresh();
      await f.conversation('a', 'tools', [
        user('look it up'),
        { role: 'assistant', content: '', tool_calls: [{ id: 'c1', name: 'weather_lookup', arguments: '{"secret":"hunter2"}' }] },
        { role: 'tool', content: 'token=sk-supersecret', tool_call_id: 'c1', name: 'weather_lookup' },
        assistant('sunny'),
      ]);
      expect(await f.q('hunter2')).toEqual([]);
      expect(await f.q('supersecret')).toEqual([]);
      const hits = await f.q('weather_lookup');
      expect(hits).toHaveLength(1);
      expect(hits[0]!.window.find((w) => w.role === 'tool')).toEqual({ role: 'tool', msg_idx: 2, snippet: '', truncated: false, tool_name: 'weather_lookup' });
      expect(hits[0]!.window.find((w) => w.msg_idx === 1)!.tool_name).toBe('weather_lookup');
    });

    it('treats a query as words: syntax characters and operators are words or nothing', async () => {
      await f.fresh();
      await f.conversation('a', 's', [user('alpha beta gamma, see example.com or v3.14'), assistant('ok')]);
      for (const query of ['"alpha', 'alpha)', '(alpha', 'alph*', '-alpha', 'alpha <-> beta', 'alpha | beta', '!alpha', 'alpha & !beta', 'alpha:*', "al'pha", '{alpha}', 'alpha\\', 'or', 'and', 'not']) {
        await expect(f.q(query), query).resolves.toBeDefined();
      }
      expect(await f.q('-alpha')).toHaveLength(1);
      expect(await f.q('!alpha')).toHaveLength(1);
      expect(await f.q('NOT alpha')).toHaveLength(1);
      expect(await f.q('alph*')).toEqual([]); // a word, not a prefix
      expect(await f.q('alpha:*')).toHaveLength(1); // the word alpha; `:*` means nothing
      expect(await f.q('example')).toHaveLength(1); // words inside punctuation are words
      expect(await f.q('14')).toHaveLength(1);
      for (const query of ['', '   ', '"', '()', '*', '- + ^ : "" \'\'', '<->', '!&|']) expect(await f.q(query), query).toEqual([]);
    });

    it('returns a window of context around the match, at most 16 messages, whatever context is asked', async () => {
      await f.fresh();
      const messages: Message[] = [];
      for (let i = 0; i < 40; i++) messages.push(i % 2 ? assistant(`reply ${i}`) : user(i === 20 ? 'the needle is here' : `message ${i}`));
      await f.conversation('a', 'long', messages);
      const [hit] = await f.q('needle');
      expect(hit!.msg_idx).toBe(20);
      expect(hit!.window.map((w) => w.msg_idx)).toEqual([16, 17, 18, 19, 20, 21, 22, 23, 24]);
      const [wide] = await f.q('needle', { contextBefore: 30, contextAfter: 30 });
      expect(wide!.window).toHaveLength(16);
      const [none] = await f.q('needle', { contextBefore: 0, contextAfter: 0 });
      expect(none!.window.map((w) => w.msg_idx)).toEqual([20]);
      const [huge] = await f.q('needle', { contextBefore: 2 ** 53, contextAfter: Number.MAX_SAFE_INTEGER });
      expect(huge!.window).toHaveLength(16);
      expect(huge!.window.map((w) => w.msg_idx)).toContain(20);
    });

    it('cuts snippets to 1024 bytes on character boundaries and says so', async () => {
      await f.fresh();
      await f.conversation('a', 'big', [user(`${'ä'.repeat(2000)} needle ${'ö'.repeat(2000)}`), assistant('short')]);
      const [hit] = await f.q('needle', { contextAfter: 1 });
      expect(hit!.window[0]!.truncated).toBe(true);
      expect(Buffer.byteLength(hit!.window[0]!.snippet)).toBeLessThanOrEqual(1024);
      expect(hit!.window[0]!.snippet).toContain('needle');
      expect(hit!.window[1]).toMatchObject({ snippet: 'short', truncated: false });
    });

    it('honours limit and the agent and sender filters', async () => {
      await f.fresh();
      const turns = Array.from({ length: 30 }, (_, i) => ({ conv: ref(i % 2 ? 'odd' : 'even', `s${i}`), messages: [user(`lychee ${i}`), assistant('ok')] }));
      expect(await f.shard.writeTurns(turns)).toEqual(turns.map(() => null));
      expect(await f.q('lychee')).toHaveLength(5);
      expect(await f.q('lychee', { limit: 20 })).toHaveLength(20);
      const odd = await f.q('lychee', { agent: 'odd', limit: 20 });
      expect(odd).toHaveLength(15);
      expect(odd.every((h) => h.agent === 'odd')).toBe(true);
      expect((await f.q('lychee', { sender: 's4' })).map((h) => h.sender)).toEqual(['s4']);
    });

    it('ranks only the newest SEARCH_CANDIDATES matches: an older match is found while fewer newer ones match', async () => {
      await f.fresh();
      // The strongest match, stored first: a short user message repeating the word. Its title, from its
      // first message, does not match (a title match lifts a conversation whatever its messages' age).
      await f.conversation('a', 'old', [user('hello'), assistant('ok'), user('zebra zebra zebra'), assistant('ok')]);
      // Newer messages that do not match never push it out, however many.
      await f.conversation('a', 'filler', Array.from({ length: 2 * SEARCH_CANDIDATES }, (_, i) => (i % 2 ? assistant(`nothing ${i}`) : user(`plain ${i}`))));
      // SEARCH_CANDIDATES - 1 newer weak matches: the old one is still among the newest SEARCH_CANDIDATES.
      const weak = (n: number): Message[] => Array.from({ length: n }, (_, i) => assistant(`a long sentence with many other words and one zebra somewhere ${i}`));
      await f.conversation('a', 'new', weak(SEARCH_CANDIDATES - 1));
      expect((await f.q('zebra')).map((h) => h.sender)).toEqual(['old', 'new']);
      // One more newer match: the old message is past the bound and is not ranked at all.
      await f.conversation('a', 'newer', weak(1));
      expect((await f.q('zebra')).map((h) => h.sender).sort()).toEqual(['new', 'newer']);
      // The bound counts only the matches a filter lets through: narrowed to its sender, the old one is found.
      expect((await f.q('zebra', { sender: 'old' })).map((h) => [h.sender, h.msg_idx])).toEqual([['old', 2]]);
    });

    it('lifts by title or summary only among the newest SEARCH_CANDIDATES matching conversations', async () => {
      await f.fresh();
      // Matched by its summary alone (no message or title holds the word), created first.
      const old = await f.conversation('a', 'old', [user('hello'), assistant('ok')]);
      await f.shard.setSummary(old, 'quokka quokka', 2);
      const newer = Array.from({ length: SEARCH_CANDIDATES - 1 }, (_, i) => ({ conv: ref('a', `n${i}`), messages: [user('hello'), assistant('ok')] }));
      expect(await f.shard.writeTurns(newer)).toEqual(newer.map(() => null));
      for (const t of newer) await f.shard.setSummary(t.conv.dbId!, 'a summary with one quokka among many other words', 2);
      expect((await f.q('quokka', { limit: 20 })).map((h) => h.sender)).toContain('old');
      const last = await f.conversation('a', 'last', [user('hello'), assistant('ok')]);
      await f.shard.setSummary(last, 'a summary with one quokka among many other words', 2);
      expect((await f.q('quokka', { limit: 20 })).map((h) => h.sender)).not.toContain('old');
      expect((await f.q('quokka', { sender: 'old' })).map((h) => [h.sender, h.msg_idx])).toEqual([['old', 0]]);
    });
  });

});
