/**
 * A strict MessagePack validator, independent of msgpackr: it walks the bytes
 * and throws on extension types (fixext, ext 8/16/32, including timestamps),
 * the reserved byte 0xc1, integers beyond ±2^53-1, trailing bytes, or a
 * truncated value. What passes is readable by any conforming decoder.
 *
 * Main runs it on every client body before decoding, because msgpackr
 * accepts more than the protocol allows (0xc1, its own extensions); tests
 * run it on every daemon body. It skips over strings and binaries without
 * reading them, and allocates nothing but its cursor per call.
 */
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MAX_DEPTH = 512;

class Cursor {
  at = 0;
  constructor(
    readonly buf: Uint8Array,
    readonly view: DataView,
  ) {}
}

function need(c: Cursor, n: number): void {
  if (c.at + n > c.buf.length) throw new Error(`truncated at byte ${c.at}`);
}

function skip(c: Cursor, n: number): void {
  need(c, n);
  c.at += n;
}

function u8(c: Cursor): number {
  need(c, 1);
  return c.buf[c.at++]!;
}

function u16(c: Cursor): number {
  need(c, 2);
  const v = c.view.getUint16(c.at);
  c.at += 2;
  return v;
}

function u32(c: Cursor): number {
  need(c, 4);
  const v = c.view.getUint32(c.at);
  c.at += 4;
  return v;
}

function items(c: Cursor, n: number, depth: number): void {
  for (let i = 0; i < n; i++) value(c, depth + 1);
}

function value(c: Cursor, depth: number): void {
  if (depth > MAX_DEPTH) throw new Error('nesting too deep');
  const b = u8(c);
  if (b <= 0x7f || b >= 0xe0) return; // fixint
  if (b <= 0x8f) return items(c, (b & 0x0f) * 2, depth); // fixmap
  if (b <= 0x9f) return items(c, b & 0x0f, depth); // fixarray
  if (b <= 0xbf) return skip(c, b & 0x1f); // fixstr
  switch (b) {
    case 0xc0: // nil
    case 0xc2: // false
    case 0xc3: // true
      return;
    case 0xc1:
      throw new Error('reserved byte 0xc1');
    case 0xc4: // bin 8
    case 0xd9: // str 8
      return skip(c, u8(c));
    case 0xc5:
    case 0xda:
      return skip(c, u16(c));
    case 0xc6:
    case 0xdb:
      return skip(c, u32(c));
    case 0xca: // float 32
    case 0xce: // uint 32
    case 0xd2: // int 32
      return skip(c, 4);
    case 0xcb: // float 64
      return skip(c, 8);
    case 0xcc:
    case 0xd0:
      return skip(c, 1);
    case 0xcd:
    case 0xd1:
      return skip(c, 2);
    case 0xcf: {
      need(c, 8);
      const v = c.view.getBigUint64(c.at);
      c.at += 8;
      if (v > MAX_SAFE) throw new Error('uint64 above 2^53-1');
      return;
    }
    case 0xd3: {
      need(c, 8);
      const v = c.view.getBigInt64(c.at);
      c.at += 8;
      if (v > MAX_SAFE || v < -MAX_SAFE) throw new Error('int64 beyond 2^53-1');
      return;
    }
    case 0xdc:
      return items(c, u16(c), depth);
    case 0xdd:
      return items(c, u32(c), depth);
    case 0xde:
      return items(c, u16(c) * 2, depth);
    case 0xdf:
      return items(c, u32(c) * 2, depth);
    default: // 0xc7-0xc9 ext 8/16/32, 0xd4-0xd8 fixext
      throw new Error(`extension type 0x${b.toString(16)} at byte ${c.at - 1}`);
  }
}

export function assertPortableMsgpack(buf: Uint8Array): void {
  const c = new Cursor(buf, new DataView(buf.buffer, buf.byteOffset, buf.byteLength));
  value(c, 0);
  if (c.at !== buf.length) throw new Error(`${buf.length - c.at} trailing bytes`);
}
