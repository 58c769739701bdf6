/**
 * Framing (PROTOCOL.md §1) and the portable msgpack settings. No I/O here:
 * the decoder takes chunks and calls a sink fixed at construction.
 */
import { Packr, Unpackr } from 'msgpackr';
import { FRAME_FLAGS_OFFSET, FRAME_ID_OFFSET, HEADER_BYTES, writeFrame } from './byte-layouts.ts';

export { FLAG_LAST, HEADER_BYTES } from './byte-layouts.ts';
export const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;

/**
 * Portable msgpack: no records, no structures, no extension types, so that
 * any conforming decoder in any language reads our bytes.
 */
export const packr = new Packr({ useRecords: false, variableMapSize: true, encodeUndefinedAsNil: true });
// 'auto' (numbers while safe, BigInt beyond 2^53) exists in msgpackr 2.x but is missing from its types.
const unpackOptions = { useRecords: false, int64AsType: 'auto' } as unknown as ConstructorParameters<typeof Unpackr>[0];
export const unpackr = new Unpackr(unpackOptions);

export function encodeBody(value: unknown): Uint8Array {
  return packr.pack(value);
}

export function decodeBody(body: Uint8Array): unknown {
  return unpackr.unpack(body);
}

/** UTF-8 bytes as text; invalid sequences read as U+FFFD, as in a whole-body decode. */
export function utf8Text(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

/**
 * Texts already decoded from shared bytes: the turns one publish fires carry
 * the same bytes (one object in a batch of messages), so they share one text.
 */
const decodedTexts = new WeakMap<Uint8Array, string>();

/**
 * Moves a big turn's content from the bytes main left undecoded into its
 * text (the shard does this once, when the turn arrives; once per bytes).
 */
export function decodeTurnContent(msg: { content: string; contentBytes?: Uint8Array | null }): void {
  const bytes = msg.contentBytes;
  if (bytes === undefined || bytes === null) return;
  let text = decodedTexts.get(bytes);
  if (text === undefined) decodedTexts.set(bytes, (text = utf8Text(bytes)));
  msg.content = text;
  msg.contentBytes = null;
}

/** A whole frame (header + body) in one exact-size buffer. */
export function encodeFrame(id: number, flags: number, body: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(HEADER_BYTES + body.byteLength);
  writeFrame(frame, 0, id, flags, body);
  return frame;
}

/** The reply of `ping`, `kill` and other acknowledgements, shared and frozen so its bytes can be encoded once. */
export const PONG: Readonly<{ pong: Readonly<Record<string, never>> }> = Object.freeze({ pong: Object.freeze({}) });
const PONG_BODY = Uint8Array.from(packr.pack(PONG));

/** Encodes `value` straight into a frame (PONG from bytes encoded once). */
export function frameOf(id: number, flags: number, value: unknown): Buffer {
  return encodeFrame(id, flags, value === PONG ? PONG_BODY : packr.pack(value));
}

export interface FrameSink {
  /** A complete frame. `body` may view the caller's chunk: use it before returning. */
  onFrame(id: number, flags: number, body: Uint8Array): void;
  /** A header announced a body above the limit; the decoder stops reading. */
  onOversize(id: number, length: number): void;
}

/**
 * Length-prefixed frame reader. A frame inside one chunk is handed out as a
 * subarray; a frame spanning chunks is copied, as its chunks arrive, into one
 * buffer of exactly its size, which it alone uses: a big body costs its own
 * size once, not its chunks plus their concatenation. A frame of
 * SHARED_FRAME_BYTES or more is assembled in a SharedArrayBuffer, so a
 * thread can read its bytes where they are (see sharedBytes). The announced
 * length is checked before any of the body is buffered.
 */
export class FrameDecoder {
  readonly #sink: FrameSink;
  #maxBody: number;
  /** The frame being assembled across chunks, or null. */
  #partial: Buffer | null = null;
  /** Bytes of `#partial` filled so far. */
  #filled = 0;
  /** The start of a header cut by a chunk's end (fewer than HEADER_BYTES bytes), or null. */
  #head: Buffer | null = null;
  #stopped = false;

  constructor(sink: FrameSink, maxBodyBytes: number = DEFAULT_MAX_BODY_BYTES) {
    this.#sink = sink;
    this.#maxBody = maxBodyBytes;
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  /**
   * Changes the largest body accepted from the next header on (a connection
   * lowers it before authentication, raises it after). A frame whose header
   * was already read keeps the limit it was checked against.
   */
  setMaxBody(bytes: number): void {
    this.#maxBody = bytes;
  }

  /** Stops decoding; later chunks are ignored. */
  stop(): void {
    this.#stopped = true;
    this.#partial = null;
    this.#head = null;
  }

  push(chunk: Buffer): void {
    if (this.#stopped || chunk.length === 0) return;
    if (this.#head !== null) {
      // Rare (a header cut by a chunk's end): join the few header bytes with the chunk.
      const joined = Buffer.concat([this.#head, chunk]);
      this.#head = null;
      this.#parse(joined, 0);
      return;
    }
    let off = 0;
    if (this.#partial !== null) {
      off = this.#fill(chunk);
      if (this.#partial !== null) return;
    }
    this.#parse(chunk, off);
  }

  /** Copies what `chunk` holds of the partial frame; emits it once complete. Returns the bytes used. */
  #fill(chunk: Buffer): number {
    const frame = this.#partial!;
    const used = Math.min(chunk.length, frame.length - this.#filled);
    chunk.copy(frame, this.#filled, 0, used);
    this.#filled += used;
    if (this.#filled === frame.length) {
      this.#partial = null;
      this.#emit(frame, 0, frame.length);
    }
    return used;
  }

  #emit(buf: Buffer, start: number, end: number): void {
    const id = buf.readUInt32BE(start + FRAME_ID_OFFSET);
    this.#sink.onFrame(id, buf[start + FRAME_FLAGS_OFFSET]!, buf.subarray(start + HEADER_BYTES, end));
  }

  #oversize(id: number, length: number): void {
    this.stop();
    this.#sink.onOversize(id, length);
  }

  #parse(buf: Buffer, off: number): void {
    while (off < buf.length && !this.#stopped) {
      if (buf.length - off < HEADER_BYTES) {
        this.#head = Buffer.from(buf.subarray(off)); // a copy: a view would pin the whole chunk
        return;
      }
      const length = buf.readUInt32BE(off);
      if (length > this.#maxBody) return this.#oversize(buf.readUInt32BE(off + FRAME_ID_OFFSET), length);
      const end = off + HEADER_BYTES + length;
      if (end > buf.length) {
        this.#partial = frameBuffer(HEADER_BYTES + length);
        this.#filled = 0;
        this.#fill(buf.subarray(off));
        return;
      }
      this.#emit(buf, off, end);
      off = end;
    }
  }
}

/** Frames from this size on are assembled in shared memory. */
export const SHARED_FRAME_BYTES = 64 * 1024;

function frameBuffer(bytes: number): Buffer {
  return bytes >= SHARED_FRAME_BYTES ? Buffer.from(new SharedArrayBuffer(bytes)) : Buffer.allocUnsafe(bytes);
}

/**
 * `bytes` in shared memory that another thread can read without a copy: the
 * same view when they already are (a big frame the decoder assembled), else
 * a copy into a SharedArrayBuffer of their own.
 */
export function sharedBytes(bytes: Uint8Array): Uint8Array {
  if (bytes.buffer instanceof SharedArrayBuffer) return bytes;
  const copy = new Uint8Array(new SharedArrayBuffer(bytes.byteLength));
  copy.set(bytes);
  return copy;
}
