import { describe, expect, it } from 'vitest';
import { decodeBody, packr } from '../../src/shared/codec.ts';
import { TextDeltaBody } from '../../src/shard/text-delta-body.ts';

function written(name: string, content: string, seq = 1): Buffer {
  const body = new TextDeltaBody(name, content, seq);
  const buf = Buffer.alloc(body.length + 4, 0xee);
  const end = body.writeTo(buf, 2);
  expect(end).toBe(2 + body.length);
  expect(buf[1]).toBe(0xee);
  expect(buf[end]).toBe(0xee);
  return buf.subarray(2, end);
}

describe('TextDeltaBody', () => {
  // Every string header size, on both sides of each bound, in one-, two-, three- and four-byte UTF-8.
  const lengths = [0, 1, 31, 32, 255, 256, 65_535, 65_536, 200_000];
  const units: [string, string][] = [['ascii', 'w'], ['two-byte', 'é'], ['three-byte', '€'], ['pair', '😀']];

  for (const [kind, unit] of units) {
    it(`writes the bytes msgpackr writes for ${kind} text of every header size`, () => {
      for (const bytes of lengths) {
        const content = unit.repeat(Math.ceil(bytes / Buffer.byteLength(unit)));
        for (const name of ['chunk', 'thinking']) {
          const value = { stream: { [name]: { content, seq: 3 } } };
          expect(written(name, content, 3).equals(Buffer.from(packr.pack(value)))).toBe(true);
        }
      }
    });
  }

  it('writes the bytes msgpackr writes for a seq of every integer size', () => {
    for (const seq of [1, 127, 128, 255, 256, 65_535, 65_536, 2 ** 32 - 1]) {
      const value = { stream: { chunk: { content: 'hi', seq } } };
      expect(written('chunk', 'hi', seq).equals(Buffer.from(packr.pack(value)))).toBe(true);
    }
  });

  it('writes a lone surrogate as U+FFFD, so the body stays valid UTF-8', () => {
    const body = written('chunk', 'a\ud83d');
    expect(decodeBody(body)).toEqual({ stream: { chunk: { content: 'a\ufffd', seq: 1 } } });
  });

  it('refuses a name that is not a short ASCII key', () => {
    expect(() => new TextDeltaBody('x'.repeat(32), '', 1)).toThrow();
  });
});
