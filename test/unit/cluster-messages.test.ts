/**
 * The cluster's messages (src/cluster/messages.ts) and the pieces forwarded
 * calls travel in (src/cluster/chunks.ts): what is sent comes back as it
 * was, and anything malformed is refused with an error that says what.
 */
import { describe, expect, it } from 'vitest';
import { PieceJoiner, piecesOf } from '../../src/cluster/chunks.ts';
import { decodeMessage, encodeMessage } from '../../src/cluster/messages.ts';
import { packr } from '../../src/shared/codec.ts';

describe('cluster messages', () => {
  it('come back as they were sent', () => {
    const frame = decodeMessage(encodeMessage({ t: 'frame', seq: 7, part: 0, last: true, bytes: Uint8Array.of(1, 2, 3) }), 'frame');
    expect({ ...frame, bytes: Array.from(frame.bytes) }).toEqual({ t: 'frame', seq: 7, part: 0, last: true, bytes: [1, 2, 3] });
    expect(decodeMessage(encodeMessage({ t: 'answer', error: null }), 'answer')).toEqual({ t: 'answer', error: null });
    expect(decodeMessage(encodeMessage({ t: 'request', req: 3, body: { ping: {} } }), 'request')).toEqual({ t: 'request', req: 3, body: { ping: {} } });
  });

  it('refuse what is not msgpack, not a map, of another kind, or with a field of the wrong type', () => {
    expect(() => decodeMessage(Uint8Array.of(0x81), 'ack')).toThrow(/not msgpack/);
    expect(() => decodeMessage(packr.pack([1, 2]), 'ack')).toThrow(/must be a map/);
    expect(() => decodeMessage(encodeMessage({ t: 'cancel' }), 'ack', 'body')).toThrow(/kind "cancel" where ack or body was expected/);
    expect(() => decodeMessage(packr.pack({ t: 'ack', seq: -1 }), 'ack')).toThrow(/"ack" message whose "seq" is not a whole number from 0/);
    expect(() => decodeMessage(packr.pack({ t: 'watch', from: 'a' }), 'watch')).toThrow(/"watching" is not a boolean/);
    expect(() => decodeMessage(packr.pack({ t: 'request', req: 1, body: [] }), 'request')).toThrow(/"body" is not a map/);
  });
});

describe('pieces of a forwarded message', () => {
  it('join back into the message, whatever its size', () => {
    for (const size of [0, 1, 9, 10, 11, 35]) {
      const message = Uint8Array.from({ length: size }, (_, i) => i);
      const joiner = new PieceJoiner();
      const out = piecesOf(message, 10).map((p) => joiner.push(p));
      expect(out.slice(0, -1).every((m) => m === null)).toBe(true);
      expect(Array.from(out.at(-1)!)).toEqual(Array.from(message));
    }
  });

  it('drop a message cut short when the next one starts, and refuse a piece out of place', () => {
    const joiner = new PieceJoiner();
    const [first] = piecesOf(new Uint8Array(25), 10);
    expect(joiner.push(first!)).toBeNull();
    expect(Array.from(joiner.push({ part: 0, last: true, bytes: Uint8Array.of(9) })!)).toEqual([9]);
    expect(() => joiner.push({ part: 2, last: true, bytes: new Uint8Array(1) })).toThrow(/piece 2 of a message arrived where piece 0 was due/);
  });
});
