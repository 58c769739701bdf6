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
 * subarray; only a frame spanning chunks is copied, once, when complete. The
 * announced length is checked before any of the body is buffered.
 */
export class FrameDecoder {
  readonly #sink: FrameSink;
  #maxBody: number;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  /** Bytes needed to finish the pending frame, or 0 while its header is incomplete. */
  #need = 0;
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
    this.#pending = [];
    this.#pendingBytes = 0;
  }

  push(chunk: Buffer): void {
    if (this.#stopped || chunk.length === 0) return;
    if (this.#pendingBytes === 0) {
      this.#parse(chunk);
      return;
    }
    this.#pending.push(chunk);
    this.#pendingBytes += chunk.length;
    if (this.#need === 0) {
      if (this.#pendingBytes < HEADER_BYTES) return;
      const joined = this.#take();
      const length = joined.readUInt32BE(0);
      if (length > this.#maxBody) {
        this.#oversize(joined.readUInt32BE(FRAME_ID_OFFSET), length);
        return;
      }
      if (joined.length >= HEADER_BYTES + length) {
        this.#parse(joined);
        return;
      }
      this.#keep(joined);
      this.#need = HEADER_BYTES + length;
      return;
    }
    if (this.#pendingBytes >= this.#need) this.#parse(this.#take());
  }

  #take(): Buffer {
    const joined = this.#pending.length === 1 ? this.#pending[0]! : Buffer.concat(this.#pending, this.#pendingBytes);
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#need = 0;
    return joined;
  }

  #keep(rest: Buffer): void {
    // Copy the tail so a retained view does not pin the whole socket chunk.
    const copy = Buffer.allocUnsafe(rest.length);
    rest.copy(copy);
    this.#pending = [copy];
    this.#pendingBytes = copy.length;
  }

  #oversize(id: number, length: number): void {
    this.stop();
    this.#sink.onOversize(id, length);
  }

  #parse(buf: Buffer): void {
    let off = 0;
    while (buf.length - off >= HEADER_BYTES) {
      const length = buf.readUInt32BE(off);
      const id = buf.readUInt32BE(off + FRAME_ID_OFFSET);
      if (length > this.#maxBody) {
        this.#oversize(id, length);
        return;
      }
      const end = off + HEADER_BYTES + length;
      if (end > buf.length) {
        this.#keep(buf.subarray(off));
        this.#need = HEADER_BYTES + length;
        return;
      }
      const flags = buf[off + FRAME_FLAGS_OFFSET]!;
      this.#sink.onFrame(id, flags, buf.subarray(off + HEADER_BYTES, end));
      if (this.#stopped) return;
      off = end;
    }
    if (off < buf.length) this.#keep(buf.subarray(off));
  }
}
