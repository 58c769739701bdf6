import { describe, expect, it } from 'vitest';
import { ChunkCoalescer, SEPARATE_PER_BATCH } from '../../src/shard/turn/chunk-coalescer.ts';

function setup() {
  const out: [string, string][] = [];
  let batch = 0;
  const c = new ChunkCoalescer((name, content) => out.push([name, content]), () => batch);
  return { out, c, nextBatch: () => batch++ };
}

describe('ChunkCoalescer', () => {
  it('passes a short answer through delta by delta', () => {
    const { out, c } = setup();
    for (const w of ['the ', 'quick ', 'fox']) c.add('chunk', w);
    c.flush();
    expect(out).toEqual([['chunk', 'the '], ['chunk', 'quick '], ['chunk', 'fox']]);
  });

  it('merges what one batch produces past the first deltas, keeping all the text in order', () => {
    const { out, c, nextBatch } = setup();
    const words = Array.from({ length: 10_000 }, (_, i) => `w${i} `);
    for (const w of words) c.add('chunk', w);
    c.flush();
    expect(out.map(([, t]) => t).join('')).toBe(words.join(''));
    expect(out.slice(0, SEPARATE_PER_BATCH).map(([, t]) => t)).toEqual(words.slice(0, SEPARATE_PER_BATCH));
    expect(out.length).toBeLessThan(SEPARATE_PER_BATCH + 5);
    // A new batch starts separate deltas again.
    nextBatch();
    c.add('chunk', 'next ');
    expect(out.at(-1)).toEqual(['chunk', 'next ']);
  });

  it('flushes merged text before a delta of another kind, and keeps multi-byte text whole', () => {
    const { out, c } = setup();
    for (let i = 0; i < SEPARATE_PER_BATCH + 3; i++) c.add('thinking', 'é€😀 ');
    c.add('chunk', 'done');
    c.flush();
    expect(out.at(-1)).toEqual(['chunk', 'done']);
    expect(out.at(-2)).toEqual(['thinking', 'é€😀 '.repeat(3)]);
  });
});
