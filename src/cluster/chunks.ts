/**
 * Cutting a message into pieces small enough for NATS, and joining them
 * back, for both directions of a forwarded call: the request body (entry
 * node to owner) and each write of frames (owner to entry node). NATS's
 * default max_payload is 1 MiB; with the call's window (forward.ts) the
 * piece size also bounds what one call has in flight.
 */

/** The most bytes one piece carries. */
export const PIECE_BYTES = 64 * 1024;

/** One piece: its place in its message (from 0) and whether it ends the message. */
export interface Piece {
  part: number;
  last: boolean;
  bytes: Uint8Array;
}

/** The pieces of `message`, in order (views of it); an empty message is one empty piece. */
export function piecesOf(message: Uint8Array, size = PIECE_BYTES): Piece[] {
  const pieces: Piece[] = [];
  for (let at = 0, part = 0; at < message.length || part === 0; at += size, part++) {
    pieces.push({ part, last: at + size >= message.length, bytes: message.subarray(at, at + size) });
  }
  return pieces;
}

/**
 * Joins pieces, in order, back into their messages. A piece numbered 0
 * starts a new message (what was pending of a message cut short is dropped);
 * a piece out of place is refused.
 */
export class PieceJoiner {
  #pending: Uint8Array[] = [];
  #next = 0;

  /** Takes a piece; returns its message once whole (null: more pieces to come). */
  push(piece: Piece): Uint8Array | null {
    if (piece.part === 0) this.#pending = [];
    else if (piece.part !== this.#next) throw new Error(`piece ${piece.part} of a message arrived where piece ${this.#next} was due`);
    this.#next = piece.last ? 0 : piece.part + 1;
    if (piece.last && this.#pending.length === 0) return piece.bytes;
    // Copies what waits: the piece's buffer belongs to the NATS client.
    this.#pending.push(piece.last ? piece.bytes : Uint8Array.from(piece.bytes));
    if (!piece.last) return null;
    const whole = Buffer.concat(this.#pending);
    this.#pending = [];
    return whole;
  }
}
