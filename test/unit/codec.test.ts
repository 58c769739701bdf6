import { describe, expect, it } from 'vitest';
import { Packr } from 'msgpackr';
import { encodeBody, encodeFrame, FLAG_LAST, FrameDecoder, HEADER_BYTES, decodeBody, SHARED_FRAME_BYTES } from '../../src/shared/codec.ts';
import { assertPortableMsgpack } from '../../src/shared/portable-msgpack.ts';

type Event = ['frame', number, number, string] | ['oversize', number, number];

function run(input: Buffer, feed: 'whole' | 'bytes' | number[], max = 1024): Event[] {
  const events: Event[] = [];
  const d = new FrameDecoder(
    {
      onFrame: (id, flags, body) => events.push(['frame', id, flags, Buffer.from(body).toString('hex')]),
      onOversize: (id, len) => events.push(['oversize', id, len]),
    },
    max,
  );
  if (feed === 'whole') d.push(input);
  else if (feed === 'bytes') for (let i = 0; i < input.length; i++) d.push(input.subarray(i, i + 1));
  else {
    let at = 0;
    for (const cut of [...feed, input.length]) {
      d.push(input.subarray(at, cut));
      at = cut;
    }
  }
  return events;
}

const f = (id: number, body: Uint8Array, flags = 0): Buffer => encodeFrame(id, flags, body);
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

describe('FrameDecoder', () => {
  const ping = encodeBody({ ping: {} });
  const big = encodeBody({ stream: { agent: 'a', content: 'x'.repeat(300) } });
  const cases: { name: string; input: Buffer; expected: Event[]; max?: number }[] = [
    { name: 'one frame', input: f(7, ping), expected: [['frame', 7, 0, hex(ping)]] },
    { name: 'flags pass through', input: f(1, ping, FLAG_LAST), expected: [['frame', 1, 1, hex(ping)]] },
    { name: 'zero-length body', input: f(3, new Uint8Array(0)), expected: [['frame', 3, 0, '']] },
    {
      name: 'two frames in one chunk',
      input: Buffer.concat([f(1, ping), f(2, big)]),
      expected: [['frame', 1, 0, hex(ping)], ['frame', 2, 0, hex(big)]],
    },
    { name: 'max id', input: f(0xffffffff, ping), expected: [['frame', 0xffffffff, 0, hex(ping)]] },
    { name: 'oversize header stops before the body', input: Buffer.concat([f(9, Buffer.alloc(2000)), f(10, ping)]), expected: [['oversize', 9, 2000]] },
    {
      name: 'frames before an oversize one are delivered',
      input: Buffer.concat([f(1, ping), f(2, Buffer.alloc(5000))]),
      expected: [['frame', 1, 0, hex(ping)], ['oversize', 2, 5000]],
    },
    { name: 'exactly the limit is allowed', input: f(4, Buffer.alloc(1024, 0xc0)), expected: [['frame', 4, 0, 'c0'.repeat(1024)]] },
  ];
  for (const c of cases) {
    it(`${c.name} (whole)`, () => expect(run(c.input, 'whole', c.max)).toEqual(c.expected));
    it(`${c.name} (byte by byte)`, () => expect(run(c.input, 'bytes', c.max)).toEqual(c.expected));
  }

  it('reassembles one frame across three chunks', () => {
    const input = f(5, big);
    expect(run(input, [4, 100])).toEqual([['frame', 5, 0, hex(big)]]);
    expect(run(input, [HEADER_BYTES, HEADER_BYTES + 1])).toEqual([['frame', 5, 0, hex(big)]]);
  });

  it('reports an oversize header as soon as the header is complete, without the body', () => {
    const header = f(11, Buffer.alloc(4096)).subarray(0, HEADER_BYTES);
    expect(run(header, 'bytes')).toEqual([['oversize', 11, 4096]]);
  });

  it('setMaxBody raises the limit from the next header on, even within one chunk (the pre-auth limit)', () => {
    const events: Event[] = [];
    const d: FrameDecoder = new FrameDecoder(
      {
        onFrame: (id, flags, body) => {
          events.push(['frame', id, flags, Buffer.from(body).toString('hex')]);
          if (id === 1) d.setMaxBody(4096); // as a connection does once `auth` succeeds
        },
        onOversize: (id, len) => events.push(['oversize', id, len]),
      },
      16,
    );
    d.push(Buffer.concat([f(1, ping), f(2, Buffer.alloc(2000)), f(3, Buffer.alloc(5000))]));
    expect(events.map((e) => e.slice(0, 2))).toEqual([['frame', 1], ['frame', 2], ['oversize', 3]]);
  });

  it('a lowered limit refuses a header before any of its body arrives', () => {
    const events: Event[] = [];
    const d = new FrameDecoder({ onFrame: () => {}, onOversize: (id, len) => events.push(['oversize', id, len]) }, 16 * 1024 * 1024);
    d.setMaxBody(1024);
    d.push(f(9, Buffer.alloc(16 * 1024 * 1024)).subarray(0, HEADER_BYTES));
    expect(events).toEqual([['oversize', 9, 16 * 1024 * 1024]]);
  });

  it('assembles a big frame spanning chunks in one shared buffer of exactly its size', () => {
    const body = encodeBody({ stream: { agent: 'a', content: 'y'.repeat(SHARED_FRAME_BYTES * 3) } });
    const next = encodeBody({ ping: {} });
    const input = Buffer.concat([f(5, body), f(6, next)]);
    const got: Uint8Array[] = [];
    const d = new FrameDecoder({ onFrame: (_id, _flags, b) => got.push(b), onOversize: () => {} }, body.length);
    for (let at = 0; at < input.length; at += 65_536) d.push(input.subarray(at, at + 65_536));
    expect(got.map(hex)).toEqual([hex(body), hex(next)]);
    expect(got[0]!.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(got[0]!.buffer.byteLength).toBe(HEADER_BYTES + body.length);
  });

  it('ignores input after stop()', () => {
    const events: number[] = [];
    const d = new FrameDecoder({ onFrame: (id) => events.push(id), onOversize: () => {} });
    d.push(f(1, ping));
    d.stop();
    d.push(f(2, ping));
    expect(events).toEqual([1]);
  });
});

describe('portable msgpack', () => {
  it('encodes what a strict decoder accepts', () => {
    const body = encodeBody({ stream: { end: { agent: 'a', error: '', usage: { prompt_tokens: 1, total_tokens: 2 }, n: 2 ** 53 - 1, f: 1.5, b: new Uint8Array([1]), list: [null, true] } } });
    expect(() => assertPortableMsgpack(body)).not.toThrow();
    const decoded = decodeBody(body) as { stream: { end: Record<string, unknown> } };
    expect(Buffer.from(decoded.stream.end.b as Uint8Array)).toEqual(Buffer.from([1]));
    expect({ ...decoded.stream.end, b: null }).toEqual({ agent: 'a', error: '', usage: { prompt_tokens: 1, total_tokens: 2 }, n: 2 ** 53 - 1, f: 1.5, b: null, list: [null, true] });
  });

  it('the strict checker rejects extension types (msgpackr records, timestamps)', () => {
    const records = new Packr({ useRecords: true }).pack([{ a: 1 }, { a: 2 }]);
    expect(() => assertPortableMsgpack(records)).toThrow(/extension/);
    const date = new Packr({ useRecords: false }).pack(new Date(0));
    expect(() => assertPortableMsgpack(date)).toThrow(/extension/);
  });
});

describe('assertPortableMsgpack', () => {
  const bad: [string, number[], RegExp][] = [
    ['reserved 0xc1', [0xc1], /reserved/],
    ['fixext 1', [0xd4, 0x01, 0x00], /extension/],
    ['ext 8', [0xc7, 0x01, 0x05, 0x00], /extension/],
    ['uint64 above 2^53', [0xcf, 0x00, 0x40, 0, 0, 0, 0, 0, 0], /2\^53/],
    ['truncated map', [0x81, 0xa1, 0x61], /truncated/],
    ['trailing bytes', [0xc0, 0xc0], /trailing/],
    ['empty', [], /truncated/],
  ];
  for (const [name, bytes, msg] of bad) {
    it(`refuses ${name}`, () => expect(() => assertPortableMsgpack(Uint8Array.from(bytes))).toThrow(msg));
  }
  it('accepts nested maps, arrays, str, bin and safe int64', () => {
    expect(() => assertPortableMsgpack(Uint8Array.from([0x82, 0xa1, 0x61, 0x91, 0xc3, 0xa1, 0x62, 0xc4, 0x01, 0xff]))).not.toThrow();
    expect(() => assertPortableMsgpack(Uint8Array.from([0xd3, 0xff, 0xe0, 0, 0, 0, 0, 0, 1]))).not.toThrow();
  });
});
