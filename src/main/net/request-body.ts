/**
 * Main's decoding of a client body. Routing a turn needs a few short fields;
 * its `content` may be megabytes. A big `stream` or `send` body is decoded
 * without its content, which stays UTF-8 bytes (ContentBytes) in shared
 * memory: the shard decodes them once, where they lie, and main holds no
 * copy (a structured clone of the text would cost two). Small bodies take
 * msgpackr's one fast call, as before.
 */
import { decodeBody, sharedBytes } from '../../shared/codec.ts';
import { valueEnd } from '../../shared/portable-msgpack.ts';

/** Bodies from this size on have their turn content left undecoded. */
export const LAZY_BODY_BYTES = 64 * 1024;
const TURN_OPS = new Set(['stream', 'send']);

/** A turn's content as the client's UTF-8 bytes, in shared memory. */
export class ContentBytes {
  constructor(readonly bytes: Uint8Array) {}
}

interface Span {
  start: number;
  end: number;
}

/** The bytes of the string whose header is at `at`, or null when no string starts there. */
function stringAt(buf: Uint8Array, at: number): Span | null {
  const b = buf[at]!;
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let start: number;
  let length: number;
  if (b >= 0xa0 && b <= 0xbf) [start, length] = [at + 1, b & 0x1f];
  else if (b === 0xd9) [start, length] = [at + 2, buf[at + 1]!];
  else if (b === 0xda) [start, length] = [at + 3, view.getUint16(at + 1)];
  else if (b === 0xdb) [start, length] = [at + 5, view.getUint32(at + 1)];
  else return null;
  return { start, end: start + length };
}

/** A map header at `at`: its entry count and where its first key starts, or null. */
function mapAt(buf: Uint8Array, at: number): { entries: number; first: number } | null {
  const b = buf[at]!;
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  if (b >= 0x80 && b <= 0x8f) return { entries: b & 0x0f, first: at + 1 };
  if (b === 0xde) return { entries: view.getUint16(at + 1), first: at + 3 };
  if (b === 0xdf) return { entries: view.getUint32(at + 1), first: at + 5 };
  return null;
}

function textOf(buf: Uint8Array, s: Span): string {
  return Buffer.from(buf.buffer, buf.byteOffset + s.start, s.end - s.start).toString('utf8');
}

/**
 * Where the value of the last `content` key of a one-operation turn body is,
 * when it is a string of at least LAZY_BODY_BYTES bytes: the string's header
 * offset and its bytes. Null for any other shape (decoded whole instead).
 */
function bigContent(body: Uint8Array): { header: number; bytes: Span } | null {
  const top = mapAt(body, 0);
  if (top === null || top.entries !== 1) return null;
  const opName = stringAt(body, top.first);
  if (opName === null || !TURN_OPS.has(textOf(body, opName))) return null;
  const args = mapAt(body, opName.end);
  if (args === null) return null;
  let found: { header: number; bytes: Span } | null = null;
  let at = args.first;
  for (let i = 0; i < args.entries; i++) {
    const key = stringAt(body, at);
    const valueAt = key === null ? valueEnd(body, at) : key.end;
    const isContent = key !== null && key.end - key.start === 7 && textOf(body, key) === 'content';
    const str = isContent ? stringAt(body, valueAt) : null;
    if (isContent) found = str !== null && str.end - str.start >= LAZY_BODY_BYTES ? { header: valueAt, bytes: str } : null;
    at = str !== null ? str.end : valueEnd(body, valueAt);
  }
  return found;
}

/**
 * Decodes a checked body (assertPortableMsgpack passed). A big turn's
 * content comes back as ContentBytes: the rest is decoded from a copy of the
 * body with an empty string in its place, so every other field reads exactly
 * as a whole decode would.
 */
export function decodeRequest(body: Uint8Array): unknown {
  if (body.length < LAZY_BODY_BYTES) return decodeBody(body);
  const content = bigContent(body);
  if (content === null) return decodeBody(body);
  const rest = Buffer.allocUnsafe(content.header + 1 + body.length - content.bytes.end);
  rest.set(body.subarray(0, content.header), 0);
  rest[content.header] = 0xa0; // the empty fixstr
  rest.set(body.subarray(content.bytes.end), content.header + 1);
  const value = decodeBody(rest) as Record<string, Record<string, unknown>>;
  const { start, end } = content.bytes;
  Object.values(value)[0]!.content = new ContentBytes(sharedBytes(body.subarray(start, end)));
  return value;
}
