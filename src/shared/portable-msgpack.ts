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
 *
 * It also bounds the work of decoding: array and map entries are counted as
 * their headers announce them (a map entry, key and value, counts once), and
 * a body announcing more than `maxElements` in total is refused before any
 * of them is walked, let alone materialized. A header announcing more values
 * than bytes remain is refused at once, whatever the limit.
 */
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MAX_DEPTH = 512;

/** Thrown when a body announces more array or map entries than allowed. */
export class TooManyElementsError extends Error {
  constructor(
    readonly limit: number,
    /** The byte just past the header that went over: how far the walk got. */
    readonly at: number,
  ) {
    super(`more than ${limit} array or map entries (max_elements), refused at byte ${at}`);
    this.name = 'TooManyElementsError';
  }
}

class Cursor {
  at = 0;
  /** Array and map entries announced so far. */
  elements = 0;
  constructor(
    readonly buf: Uint8Array,
    readonly view: DataView,
    readonly maxElements: number,
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

/** Counts `entries` announced by a header, then walks its `values` (2 per map entry). */
function announce(c: Cursor, entries: number, values: number): void {
  c.elements += entries;
  if (c.elements > c.maxElements) throw new TooManyElementsError(c.maxElements, c.at);
  // Every value takes at least one byte: a larger claim is a lie, refused now.
  if (values > c.buf.length - c.at) throw new Error(`truncated: ${values} values announced at byte ${c.at}, ${c.buf.length - c.at} bytes left`);
}

function array(c: Cursor, n: number, depth: number): void {
  announce(c, n, n);
  for (let i = 0; i < n; i++) value(c, depth + 1);
}

function map(c: Cursor, n: number, depth: number): void {
  announce(c, n, n * 2);
  for (let i = 0; i < n * 2; i++) value(c, depth + 1);
}

function value(c: Cursor, depth: number): void {
  if (depth > MAX_DEPTH) throw new Error('nesting too deep');
  const b = u8(c);
  if (b <= 0x7f || b >= 0xe0) return; // fixint
  if (b <= 0x8f) return map(c, b & 0x0f, depth); // fixmap
  if (b <= 0x9f) return array(c, b & 0x0f, depth); // fixarray
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
      return array(c, u16(c), depth);
    case 0xdd:
      return array(c, u32(c), depth);
    case 0xde:
      return map(c, u16(c), depth);
    case 0xdf:
      return map(c, u32(c), depth);
    default: // 0xc7-0xc9 ext 8/16/32, 0xd4-0xd8 fixext
      throw new Error(`extension type 0x${b.toString(16)} at byte ${c.at - 1}`);
  }
}

/**
 * Throws unless `buf` is one portable value announcing at most `maxElements`
 * array or map entries in total (unbounded by default, for trusted bodies).
 */
export function assertPortableMsgpack(buf: Uint8Array, maxElements = Number.POSITIVE_INFINITY): void {
  const c = new Cursor(buf, new DataView(buf.buffer, buf.byteOffset, buf.byteLength), maxElements);
  value(c, 0);
  if (c.at !== buf.length) throw new Error(`${buf.length - c.at} trailing bytes`);
}

/** Where the value starting at byte `at` of an already checked body ends (for readers that skip values). */
export function valueEnd(buf: Uint8Array, at: number): number {
  const c = new Cursor(buf, new DataView(buf.buffer, buf.byteOffset, buf.byteLength), Number.POSITIVE_INFINITY);
  c.at = at;
  value(c, 0);
  return c.at;
}
