import { describe, expect, it } from 'vitest';
import {
  EVENT_LENGTH_BYTES,
  FLAG_LAST,
  FRAME_ID_OFFSET,
  GrowableBytes,
  HEADER_BYTES,
  SECTION_HEADER_BYTES,
  forEachSection,
  readEventList,
  writeEventEntry,
  writeFrame,
  writeSectionHeader,
} from '../../src/shared/byte-layouts.ts';
import { FrameDecoder } from '../../src/shared/codec.ts';

const bytes = (...values: number[]): Uint8Array => Uint8Array.from(values);

describe('byte layouts', () => {
  it('a frame is [length u32][id u32][flags u8][body], read back by the frame decoder', () => {
    const body = bytes(0x81, 0xa1, 0x61, 0x01);
    const buf = Buffer.alloc(HEADER_BYTES + body.length);
    expect(writeFrame(buf, 0, 0xfffffffe, FLAG_LAST, body)).toBe(buf.length);
    expect(buf.subarray(0, HEADER_BYTES).toString('hex')).toBe('00000004' + 'fffffffe' + '01');
    expect(buf.readUInt32BE(FRAME_ID_OFFSET)).toBe(0xfffffffe);
    const got: [number, number, string][] = [];
    new FrameDecoder({ onFrame: (id, flags, b) => got.push([id, flags, Buffer.from(b).toString('hex')]), onOversize: () => {} }).push(buf);
    expect(got).toEqual([[0xfffffffe, FLAG_LAST, '81a16101']]);
  });

  it('batch sections round-trip: connection, then its frames', () => {
    const sections: [number, Uint8Array][] = [[1, bytes(1, 2, 3)], [0xffffffff, bytes()], [7, bytes(9)]];
    const size = sections.reduce((n, [, f]) => n + SECTION_HEADER_BYTES + f.length, 0);
    const buf = Buffer.alloc(size);
    let at = 0;
    for (const [conn, frames] of sections) {
      writeSectionHeader(buf, at, conn, frames.length);
      buf.set(frames, at + SECTION_HEADER_BYTES);
      at += SECTION_HEADER_BYTES + frames.length;
    }
    const read: [number, number[]][] = [];
    forEachSection(buf, (conn, frames) => read.push([conn, [...frames]]));
    expect(read).toEqual(sections.map(([c, f]) => [c, [...f]]));
  });

  it('event lists round-trip, empty bodies included', () => {
    const bodies = [bytes(0xc0), bytes(), bytes(1, 2, 3, 4, 5)];
    const list = new GrowableBytes(Buffer.alloc(2)); // grows as entries are added
    for (const b of bodies) {
      list.reserve(EVENT_LENGTH_BYTES + b.length);
      list.len = writeEventEntry(list.buf, list.len, b);
    }
    expect(list.len).toBe(3 * EVENT_LENGTH_BYTES + 6);
    expect(readEventList(list.buf.subarray(0, list.len), bodies.length).map((b) => [...b])).toEqual(bodies.map((b) => [...b]));
  });

  it('a growing buffer keeps what it held', () => {
    const g = new GrowableBytes(Buffer.from([1, 2]));
    g.len = 2;
    g.reserve(10);
    expect(g.buf.length).toBeGreaterThanOrEqual(12);
    expect([...g.buf.subarray(0, 2)]).toEqual([1, 2]);
  });
});
