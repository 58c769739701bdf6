/**
 * The frames of one batch of agent events, laid out once for all the
 * observers of one filter. A frame's header names its observer's request, so
 * each observer needs its own headers; a body is the same for all. Small
 * bodies are copied with their headers (one buffer per observer, cheaper
 * than a write each); a body of SHARED_BODY_BYTES or more is written as the
 * one buffer the shard sent, which every observer's socket shares: a big
 * event costs its size once, not once per observer. Observers with the same
 * request id (clients number their requests alike, so most observe under the
 * same few ids) share the rendered frames too: the copy is made once per id.
 */
import { FRAME_ID_OFFSET, HEADER_BYTES, writeFrame, writeFrameHeader } from '../../shared/byte-layouts.ts';

/** Bodies from this size on are shared by every observer's socket instead of copied. */
export const SHARED_BODY_BYTES = 1024;

/** A run of bytes each observer copies (with its request id patched in), or a body all of them share. */
type Part = { own: Buffer; idOffsets: number[] } | { shared: Uint8Array };

export interface Template {
  parts: Part[];
  /** Events in the batch for this filter. */
  count: number;
  /** The frames as written for a request id (framesOf), made on first use: sockets keep them, so they are never changed after. */
  byReq: Map<number, readonly Uint8Array[]>;
  /** The request id framesOf was last asked for, and its frames: observers mostly share one id, so most asks skip the map. */
  lastReq: number;
  lastFrames: readonly Uint8Array[];
}

/** The batch's frames for observers of `only` (null: every agent), with request id 0 in each header. */
export function buildTemplate(agents: readonly string[], bodies: readonly Uint8Array[], only: string | null): Template {
  const parts: Part[] = [];
  let count = 0;
  let size = 0;
  let run: number[] = []; // indexes of the bodies of the current copied run
  const endRun = (bigBody: Uint8Array | null): void => {
    const own = Buffer.allocUnsafe(size + (bigBody === null ? 0 : HEADER_BYTES));
    const idOffsets: number[] = [];
    let at = 0;
    for (const i of run) {
      idOffsets.push(at + FRAME_ID_OFFSET);
      at = writeFrame(own, at, 0, 0, bodies[i]!); // id 0: each observer patches in its own
    }
    if (bigBody !== null) {
      idOffsets.push(at + FRAME_ID_OFFSET);
      writeFrameHeader(own, at, bigBody.length, 0, 0);
    }
    if (own.length > 0) parts.push({ own, idOffsets });
    if (bigBody !== null) parts.push({ shared: bigBody });
    run = [];
    size = 0;
  };
  for (let i = 0; i < bodies.length; i++) {
    if (only !== null && agents[i] !== only) continue;
    count++;
    const body = bodies[i]!;
    if (body.length >= SHARED_BODY_BYTES) endRun(body);
    else {
      run.push(i);
      size += HEADER_BYTES + body.length;
    }
  }
  if (run.length > 0) endRun(null);
  return { parts, count, byReq: new Map(), lastReq: -1, lastFrames: [] };
}

/** Adds what the observer of request `req` is written to `out`: its own copies of the headers, the shared bodies as they are. */
export function framesFor(t: Template, req: number, out: Pieces): void {
  for (const part of t.parts) {
    if ('shared' in part) {
      out.shared(part.shared);
      continue;
    }
    out.own(part.own, part.idOffsets, req);
  }
}

/**
 * The batch's frames for the observer of request `req`, as the buffers to
 * write: the same buffers for every observer of that id, which their sockets
 * share (a connection with one observer needs no bytes of its own).
 */
export function framesOf(t: Template, req: number): readonly Uint8Array[] {
  if (req === t.lastReq) return t.lastFrames;
  let out = t.byReq.get(req);
  if (out === undefined) out = renderFrames(t, req);
  t.lastReq = req;
  t.lastFrames = out;
  return out;
}

function renderFrames(t: Template, req: number): readonly Uint8Array[] {
  const out = t.parts.map((part) => {
    if ('shared' in part) return part.shared;
    const own = Buffer.allocUnsafe(part.own.length);
    own.set(part.own);
    for (const off of part.idOffsets) own.writeUInt32BE(req, off);
    return own;
  });
  t.byReq.set(req, out);
  return out;
}

/** Bytes of a connection's own: a template's part to copy with `req` patched in at `idOffsets`, or ready bytes (no offsets). */
interface OwnBytes {
  bytes: Uint8Array;
  idOffsets: readonly number[];
  req: number;
}

/** What one connection is written for one batch: runs of its own bytes joined into one buffer each, shared bodies between them. */
export class Pieces {
  readonly #out: Uint8Array[] = [];
  #run: OwnBytes[] = [];
  #runBytes = 0;

  /** Bytes copied into the connection's buffer (a template's, shared by every observer, with this one's request id patched in). */
  own(bytes: Uint8Array, idOffsets: readonly number[] = [], req = 0): void {
    this.#run.push({ bytes, idOffsets, req });
    this.#runBytes += bytes.length;
  }

  shared(body: Uint8Array): void {
    this.#endRun();
    this.#out.push(body);
  }

  /** One buffer for the run: the socket keeps it until sent, so it is the connection's own. */
  #endRun(): void {
    if (this.#run.length === 0) return;
    const buf = Buffer.allocUnsafe(this.#runBytes);
    let at = 0;
    for (const { bytes, idOffsets, req } of this.#run) {
      buf.set(bytes, at);
      for (const off of idOffsets) buf.writeUInt32BE(req, at + off);
      at += bytes.length;
    }
    this.#out.push(buf);
    this.#run = [];
    this.#runBytes = 0;
  }

  /** One write, or one corked run of writes when a shared body is among them. */
  writeTo(sink: { write(frame: Uint8Array): void; writeChunks?(chunks: readonly Uint8Array[]): void }): void {
    this.#endRun();
    const out = this.#out;
    if (out.length === 0) return;
    if (out.length === 1) sink.write(out[0]!);
    else if (sink.writeChunks !== undefined) sink.writeChunks(out);
    else for (const c of out) sink.write(c);
  }
}
