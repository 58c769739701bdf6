/**
 * rankConversations (storage/search-rules.ts), which both stores' searches
 * end with: one hit per conversation, its best candidate plus its title or
 * summary lift, best first, ties to the older conversation. Checked against
 * the rule written out plainly, on arbitrary candidates and lifts.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { rankConversations } from '../../src/storage/search-rules.ts';

interface Candidate {
  conversation_id: number;
  idx: number;
  score: number;
}

/** The rule itself: each conversation's first (best) candidate, its lift added, sorted, cut at `limit`. */
function byTheRule(candidates: Candidate[], lifts: { id: number; score: number }[], limit: number): { id: number; idx: number; score: number }[] {
  const ids = [...new Set([...candidates.map((c) => c.conversation_id), ...lifts.map((l) => l.id)])];
  return ids
    .map((id) => {
      const best = candidates.find((c) => c.conversation_id === id);
      const lift = lifts.find((l) => l.id === id);
      return { id, idx: best?.idx ?? 0, score: (best?.score ?? 0) + (lift?.score ?? 0) };
    })
    .sort((a, b) => b.score - a.score || a.id - b.id)
    .slice(0, limit);
}

const score = fc.double({ min: 0, max: 20, noNaN: true });

describe('rankConversations', () => {
  it('gives one hit per conversation, lifted, best first, ties to the older', () => {
    const candidates = [
      { conversation_id: 7, idx: 3, score: 5 },
      { conversation_id: 2, idx: 1, score: 4 },
      { conversation_id: 7, idx: 9, score: 1 }, // not 7's best: never shown
      { conversation_id: 5, idx: 0, score: 4 },
    ];
    const lifts = [
      { id: 5, score: 2 },
      { id: 9, score: 4 }, // a title match only
    ];
    expect(rankConversations(candidates, lifts, 3)).toEqual([
      { id: 5, idx: 0, score: 6 },
      { id: 7, idx: 3, score: 5 },
      { id: 2, idx: 1, score: 4 }, // ties with 9: the older conversation first
    ]);
  });

  it('agrees with the rule on any candidates and lifts', () => {
    const candidate = fc.record({ conversation_id: fc.integer({ min: 1, max: 40 }), idx: fc.nat(100), score });
    const lifts = fc.uniqueArray(fc.record({ id: fc.integer({ min: 1, max: 40 }), score }), { selector: (l) => l.id, maxLength: 20 });
    fc.assert(
      fc.property(fc.array(candidate, { maxLength: 200 }), lifts, fc.integer({ min: 1, max: 20 }), (cs, ls, limit) => {
        const best = [...cs].sort((a, b) => b.score - a.score);
        expect(rankConversations(best, ls, limit)).toEqual(byTheRule(best, ls, limit));
      }),
    );
  });
});
