/** agentctl's "did you mean": edit distance and when a candidate is close enough to offer. */
import { describe, expect, it } from 'vitest';
import { closest, didYouMean, editDistance } from '../../src/cli/suggest.ts';

describe('suggest', () => {
  it('counts insertions, deletions, substitutions and swapped neighbours as one edit each', () => {
    expect(editDistance('stream', 'stream')).toBe(0);
    expect(editDistance('stram', 'stream')).toBe(1);
    expect(editDistance('strem', 'stream')).toBe(1);
    expect(editDistance('stzeam', 'stream')).toBe(1);
    expect(editDistance('sterams', 'streams')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
  });

  it('offers the closest name only when it is a likely typo or the word begins it', () => {
    const commands = ['stream', 'send', 'stats', 'search', 'subscribe'];
    expect(closest('stram', commands)).toBe('stream');
    expect(closest('subscr', commands)).toBe('subscribe');
    expect(closest('frobnicate', commands)).toBeUndefined();
    expect(closest('x', commands)).toBeUndefined();
    expect(didYouMean('--jsn', ['--json', '--home'], (s) => s)).toBe(' (did you mean --json?)');
    expect(didYouMean('zzz', ['--json'])).toBe('');
  });
});
