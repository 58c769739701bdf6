/**
 * The body of a stream text delta, `{stream: {<name>: {content: <text>, seq: <n>}}}`,
 * as MessagePack written straight into a buffer: the same bytes msgpackr
 * writes, without its pool. msgpackr packs into one module-wide buffer and,
 * when a string does not fit, replaces it with one four times the string's
 * worst case (3 bytes a unit): a merged 64 KiB delta leaves a dead buffer of
 * about 800 KB behind every few deltas. Those outlive young collections and
 * wait for a full one, so a 16 MiB answer piled up over 20 MB of them in
 * the shard (bench/big-stream-memory.ts).
 */

const MAP_OF_ONE = 0x81;
const MAP_OF_TWO = 0x82;
const FIXINT_MAX = 0x7f;
const UINT8 = 0xcc;
const UINT16 = 0xcd;
const UINT32 = 0xce;
const FIXSTR = 0xa0;
const FIXSTR_MAX = 31;
const STR8 = 0xd9;
const STR16 = 0xda;
const STR32 = 0xdb;

/** Bytes of a string's header for `bytes` bytes of UTF-8. */
function strHeaderBytes(bytes: number): number {
  if (bytes <= FIXSTR_MAX) return 1;
  if (bytes <= 0xff) return 2;
  if (bytes <= 0xffff) return 3;
  return 5;
}

function writeStrHeader(buf: Buffer, at: number, bytes: number): number {
  if (bytes <= FIXSTR_MAX) {
    buf[at] = FIXSTR | bytes;
    return at + 1;
  }
  if (bytes <= 0xff) {
    buf[at] = STR8;
    buf[at + 1] = bytes;
    return at + 2;
  }
  if (bytes <= 0xffff) {
    buf[at] = STR16;
    buf.writeUInt16BE(bytes, at + 1);
    return at + 3;
  }
  buf[at] = STR32;
  buf.writeUInt32BE(bytes, at + 1);
  return at + 5;
}

/** Bytes of a msgpack uint (seqs stay below 2^32). */
function uintBytes(n: number): number {
  if (n <= FIXINT_MAX) return 1;
  if (n <= 0xff) return 2;
  if (n <= 0xffff) return 3;
  return 5;
}

function writeUint(buf: Buffer, at: number, n: number): number {
  if (n <= FIXINT_MAX) {
    buf[at] = n;
    return at + 1;
  }
  if (n <= 0xff) {
    buf[at] = UINT8;
    buf[at + 1] = n;
    return at + 2;
  }
  if (n <= 0xffff) {
    buf[at] = UINT16;
    buf.writeUInt16BE(n, at + 1);
    return at + 3;
  }
  buf[at] = UINT32;
  buf.writeUInt32BE(n, at + 1);
  return at + 5;
}

/** A short ASCII key as a fixstr, written once per process. */
function keyBytes(key: string): Buffer {
  if (!/^[\x20-\x7e]{1,31}$/.test(key)) throw new Error(`"${key}" is not a short ASCII key`);
  return Buffer.concat([Buffer.of(FIXSTR | key.length), Buffer.from(key, 'latin1')]);
}

const STREAM = keyBytes('stream');
const CONTENT = keyBytes('content');
const SEQ = keyBytes('seq');
const names = new Map<string, Buffer>();

function nameBytes(name: string): Buffer {
  let key = names.get(name);
  if (key === undefined) names.set(name, (key = keyBytes(name)));
  return key;
}

/** A text delta's body, measured once and written where its frame goes. */
export class TextDeltaBody {
  readonly #name: Buffer;
  readonly #content: string;
  readonly #contentBytes: number;
  readonly #seq: number;
  /** The body's length in bytes. */
  readonly length: number;

  /** `name` is the event (`chunk`, `thinking`), `seq` the frame's number in its run; lone surrogates in `content` are written as U+FFFD. */
  constructor(name: string, content: string, seq: number) {
    this.#name = nameBytes(name);
    this.#content = content;
    this.#seq = seq;
    this.#contentBytes = Buffer.byteLength(content, 'utf8');
    const seqBytes = SEQ.length + uintBytes(seq);
    this.length = 3 + STREAM.length + this.#name.length + CONTENT.length + strHeaderBytes(this.#contentBytes) + this.#contentBytes + seqBytes;
  }

  /** Writes the body at `at` (room for `length` bytes); returns the offset just past it. */
  writeTo(buf: Buffer, at: number): number {
    buf[at++] = MAP_OF_ONE;
    at += STREAM.copy(buf, at);
    buf[at++] = MAP_OF_ONE;
    at += this.#name.copy(buf, at);
    buf[at++] = MAP_OF_TWO;
    at += CONTENT.copy(buf, at);
    at = writeStrHeader(buf, at, this.#contentBytes);
    at += buf.write(this.#content, at, this.#contentBytes, 'utf8');
    at += SEQ.copy(buf, at);
    return writeUint(buf, at, this.#seq);
  }
}
