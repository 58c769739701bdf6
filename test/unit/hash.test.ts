import { describe, expect, it } from 'vitest';
import { fnv1a32, pairHash, shardOf } from '../../src/shared/hash.ts';

const enc = new TextEncoder();

describe('fnv1a32', () => {
  it('matches the published FNV-1a test vectors', () => {
    expect(fnv1a32(enc.encode(''))).toBe(0x811c9dc5);
    expect(fnv1a32(enc.encode('a'))).toBe(0xe40c292c);
    expect(fnv1a32(enc.encode('foobar'))).toBe(0xbf9cf968);
  });

  it('pairHash(agent, sender) equals fnv1a32 of utf8(agent) 0x00 utf8(sender)', () => {
    const samples = ['', 'assistant', 'user', 'event:deploy.done', 'héllo', 'Ω≈ç√', '日本語', '🦀 crab', 'a\u0000b', '\ud800lone', 'end\udc00', 'x'.repeat(300)];
    for (const a of samples) {
      for (const s of samples) {
        const bytes = new Uint8Array([...enc.encode(a), 0, ...enc.encode(s)]);
        expect(pairHash(a, s), `${JSON.stringify(a)} / ${JSON.stringify(s)}`).toBe(fnv1a32(bytes));
      }
    }
  });

  it('separates agent from sender', () => {
    expect(pairHash('ab', 'c')).not.toBe(pairHash('a', 'bc'));
  });

  it('spreads pairs over shards', () => {
    const counts = new Array(8).fill(0) as number[];
    for (let i = 0; i < 8000; i++) counts[shardOf('assistant', `user-${i}`, 8)]!++;
    for (const c of counts) expect(c).toBeGreaterThan(800);
  });
});
