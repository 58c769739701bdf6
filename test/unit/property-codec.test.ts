/**
 * Property-based tests (fast-check) of the wire's two parsers: the frame
 * decoder and the portable-msgpack check. Run counts stay modest so the
 * suite stays fast on small machines; a failure prints its seed to replay.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { piecesAt } from '../helpers/cuts.ts';
import { decodeBody, encodeBody, encodeFrame, FrameDecoder } from '../../src/shared/codec.ts';
import { assertPortableMsgpack, TooManyElementsError } from '../../src/shared/portable-msgpack.ts';

interface Frame {
  id: number;
  flags: number;
  body: Uint8Array;
}

const frameArb: fc.Arbitrary<Frame> = fc.record({
  id: fc.integer({ min: 0, max: 0xffffffff }),
  flags: fc.integer({ min: 0, max: 255 }),
  body: fc.uint8Array({ maxLength: 300 }),
});

/** Cuts `bytes` at the given offsets (any order, repeats allowed) into chunks. */
const split = (bytes: Buffer, cuts: number[]): Buffer[] => piecesAt(bytes.length, cuts, (from, to) => bytes.subarray(from, to));

describe('frame decoder (property)', () => {
  it('any split of any sequence of frames yields exactly those frames, in order', () => {
    fc.assert(
      fc.property(fc.array(frameArb, { maxLength: 12 }), fc.array(fc.nat(), { maxLength: 40 }), (frames, cuts) => {
        const bytes = Buffer.concat(frames.map((f) => encodeFrame(f.id, f.flags, f.body)));
        const got: Frame[] = [];
        const decoder = new FrameDecoder({
          // The body may view the chunk: copy it, as the sink contract says.
          onFrame: (id, flags, body) => got.push({ id, flags, body: Uint8Array.from(body) }),
          onOversize: () => {
            throw new Error('no frame here is oversize');
          },
        }, 300);
        for (const chunk of split(bytes, cuts)) decoder.push(chunk);
        expect(got).toEqual(frames.map((f) => ({ ...f, body: Uint8Array.from(f.body) })));
      }),
      { numRuns: 300 },
    );
  });

  it('a header announcing more than the limit stops the decoder after the frames before it, however split', () => {
    fc.assert(
      fc.property(fc.array(frameArb, { maxLength: 5 }), fc.integer({ min: 301, max: 0xffffffff }), fc.array(fc.nat(), { maxLength: 20 }), (before, length, cuts) => {
        const header = Buffer.alloc(9);
        header.writeUInt32BE(length, 0);
        header.writeUInt32BE(77, 4);
        const bytes = Buffer.concat([...before.map((f) => encodeFrame(f.id, f.flags, f.body)), header, Buffer.from('tail')]);
        const got: number[] = [];
        const oversize: [number, number][] = [];
        const decoder = new FrameDecoder({ onFrame: (id) => got.push(id), onOversize: (id, len) => oversize.push([id, len]) }, 300);
        for (const chunk of split(bytes, cuts)) decoder.push(chunk);
        expect(got).toEqual(before.map((f) => f.id));
        expect(oversize).toEqual([[77, length]]);
        expect(decoder.stopped).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});

/**
 * Values every conforming msgpack decoder reads back as they were. Left out:
 * -0 (written as the integer 0) and the key "__proto__" (msgpackr renames it,
 * its guard against prototype pollution).
 */
const portable: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.maxSafeInteger(),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: false }).filter((x) => !Object.is(x, -0)),
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.uint8Array({ maxLength: 40 }),
    fc.array(tie('value'), { maxLength: 6 }),
    fc.dictionary(fc.string({ unit: 'binary', maxLength: 12 }).filter((k) => k !== '__proto__'), tie('value'), { maxKeys: 6 }),
  ),
})).value;

/** Entries a value's maps and arrays hold in total (a map entry counts once). */
function entries(v: unknown): number {
  if (Array.isArray(v)) return v.length + v.reduce<number>((n, x) => n + entries(x), 0);
  if (v !== null && typeof v === 'object' && !(v instanceof Uint8Array)) {
    const vals = Object.values(v);
    return vals.length + vals.reduce<number>((n, x) => n + entries(x), 0);
  }
  return 0;
}

/** The decoder reads bin as Buffer: compare as plain Uint8Array. */
function asPlain(v: unknown): unknown {
  if (v instanceof Uint8Array) return Uint8Array.from(v);
  if (Array.isArray(v)) return v.map(asPlain);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, asPlain(x)]));
  return v;
}

/** What the check throws: a plain Error or the element limit's, never a RangeError or TypeError from a stray read. */
function refusal(body: Uint8Array, maxElements?: number): Error | null {
  try {
    assertPortableMsgpack(body, maxElements);
    return null;
  } catch (err) {
    expect(err).toBeInstanceOf(Error);
    expect([Error, TooManyElementsError]).toContain((err as Error).constructor);
    return err as Error;
  }
}

/** Raw bytes of one extension value: fixext 1/2/4/8/16 or ext 8/16/32. */
const extArb: fc.Arbitrary<Uint8Array> = fc
  .tuple(fc.integer({ min: 0, max: 7 }), fc.integer({ min: -128, max: 127 }), fc.uint8Array({ maxLength: 20 }))
  .map(([kind, type, data]) => {
    const t = type & 0xff;
    if (kind < 5) {
      const size = 1 << kind;
      const payload = new Uint8Array(size);
      payload.set(data.subarray(0, size));
      return Uint8Array.from([0xd4 + kind, t, ...payload]);
    }
    const n = data.length;
    if (kind === 5) return Uint8Array.from([0xc7, n, t, ...data]);
    if (kind === 6) return Uint8Array.from([0xc8, 0, n, t, ...data]);
    return Uint8Array.from([0xc9, 0, 0, 0, n, t, ...data]);
  });

/** `[value, inserted]` as a two-element msgpack array, with `inserted` given as raw bytes. */
function pairWith(value: unknown, inserted: Uint8Array): Uint8Array {
  return Uint8Array.from([0x92, ...encodeBody(value), ...inserted]);
}

describe('portable-msgpack check (property)', () => {
  it('accepts every portable value our encoder writes, and it decodes back equal', () => {
    fc.assert(
      fc.property(portable, (v) => {
        const body = encodeBody(v);
        expect(refusal(body)).toBeNull();
        expect(asPlain(decodeBody(body))).toEqual(v);
      }),
      { numRuns: 300 },
    );
  });

  it('counts entries exactly: a body of E entries passes max_elements E and is refused at E - 1', () => {
    fc.assert(
      fc.property(portable, (v) => {
        const body = encodeBody(v);
        const e = entries(v);
        expect(refusal(body, e)).toBeNull();
        if (e > 0) expect(refusal(body, e - 1)).toBeInstanceOf(TooManyElementsError);
      }),
      { numRuns: 200 },
    );
  });

  it('refuses an extension type anywhere, naming it', () => {
    fc.assert(
      fc.property(portable, extArb, (v, ext) => {
        expect(refusal(pairWith(v, ext))?.message).toMatch(/^extension type 0x(c[789]|d[4-8]) at byte \d+$/);
      }),
      { numRuns: 200 },
    );
  });

  it('refuses the reserved byte 0xc1 anywhere', () => {
    fc.assert(
      fc.property(portable, (v) => {
        expect(refusal(pairWith(v, Uint8Array.from([0xc1])))?.message).toBe('reserved byte 0xc1');
      }),
      { numRuns: 100 },
    );
  });

  it('refuses every strict prefix of a value as truncated', () => {
    fc.assert(
      fc.property(portable, fc.nat(), (v, cut) => {
        const body = encodeBody(v);
        const prefix = body.subarray(0, cut % body.length);
        expect(refusal(prefix)?.message).toMatch(/^truncated/);
      }),
      { numRuns: 300 },
    );
  });

  it('random bytes are accepted or refused with a plain error, never anything else', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.integer({ min: 0, max: 50 }), (bytes, max) => {
        refusal(bytes, max);
        refusal(bytes);
      }),
      { numRuns: 1000 },
    );
  });
});
