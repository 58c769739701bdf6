/**
 * Every byte layout agentd writes by hand, in one place:
 *
 *   frame         [body length u32][request id u32][flags u8][body…]   (PROTOCOL §1)
 *   batch section [conn u32][length u32][complete frames…]             shard → main
 *   event list    ([length u32][agent_event body…])*                   shard → main
 *
 * All integers are big-endian. The shard writes sections and event lists
 * (outbox), main reads them (shard pool) and writes frames (codec, observers).
 */

export const HEADER_BYTES = 9;
export const FLAG_LAST = 1;
/** Where a frame's request id sits, from the frame's first byte (observers patch it). */
export const FRAME_ID_OFFSET = 4;
export const FRAME_FLAGS_OFFSET = 8;
export const SECTION_HEADER_BYTES = 8;
export const EVENT_LENGTH_BYTES = 4;

/** Writes a frame header at `at`; the body follows at `at + HEADER_BYTES`. */
export function writeFrameHeader(buf: Buffer, at: number, bodyLength: number, id: number, flags: number): void {
  buf.writeUInt32BE(bodyLength, at);
  buf.writeUInt32BE(id >>> 0, at + FRAME_ID_OFFSET);
  buf[at + FRAME_FLAGS_OFFSET] = flags;
}

/** Writes a header and body at `at`; returns the offset just past them. */
export function writeFrame(buf: Buffer, at: number, id: number, flags: number, body: Uint8Array): number {
  writeFrameHeader(buf, at, body.length, id, flags);
  buf.set(body, at + HEADER_BYTES);
  return at + HEADER_BYTES + body.length;
}

/** Writes a section header for `length` bytes of frames to connection `conn`. */
export function writeSectionHeader(buf: Buffer, at: number, conn: number, length: number): void {
  buf.writeUInt32BE(conn, at);
  buf.writeUInt32BE(length, at + 4);
}

/** Calls `each` with every section's connection and frames (views into `bytes`). */
export function forEachSection(bytes: Buffer, each: (conn: number, frames: Buffer) => void): void {
  let at = 0;
  while (at < bytes.length) {
    const conn = bytes.readUInt32BE(at);
    const len = bytes.readUInt32BE(at + 4);
    at += SECTION_HEADER_BYTES;
    each(conn, bytes.subarray(at, at + len));
    at += len;
  }
}

/** Writes one event list entry at `at`; returns the offset just past it. */
export function writeEventEntry(buf: Buffer, at: number, body: Uint8Array): number {
  buf.writeUInt32BE(body.length, at);
  buf.set(body, at + EVENT_LENGTH_BYTES);
  return at + EVENT_LENGTH_BYTES + body.length;
}

/** The `count` bodies of an event list (views into `bytes`). */
export function readEventList(bytes: Buffer, count: number): Uint8Array[] {
  const bodies: Uint8Array[] = [];
  let at = 0;
  for (let i = 0; i < count; i++) {
    const len = bytes.readUInt32BE(at);
    bodies.push(bytes.subarray(at + EVENT_LENGTH_BYTES, at + EVENT_LENGTH_BYTES + len));
    at += EVENT_LENGTH_BYTES + len;
  }
  return bodies;
}

/** A byte buffer that grows by doubling; `len` bytes of it are in use. */
export class GrowableBytes {
  buf: Buffer;
  len = 0;

  constructor(buf: Buffer) {
    this.buf = buf;
  }

  /** Makes room for `extra` more bytes past `len`. */
  reserve(extra: number): void {
    if (this.len + extra <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + extra));
    this.buf.copy(grown, 0, 0, this.len);
    this.buf = grown;
  }
}
