/**
 * The shard's side of the frame channel. Reply bodies are encoded here, as
 * complete wire frames, and every frame produced in one event-loop turn is
 * coalesced into one section per connection inside one transferred buffer.
 * Main then writes each section with one call and decodes nothing.
 */
import { FLAG_LAST, HEADER_BYTES, packr } from '../shared/codec.ts';
import { SECTION_HEADER_BYTES, type FrameBatch, type QueryResult, type TurnFinished } from '../shared/threads.ts';

interface Section {
  buf: Buffer;
  len: number;
}

const INITIAL_SECTION_BYTES = 4096;
/** Section buffers kept for reuse between flushes. */
const SPARE_LIMIT = 64;

export type PostBatch = (batch: FrameBatch, transfer: ArrayBuffer[]) => void;

export class Outbox {
  readonly #post: PostBatch;
  #sections = new Map<number, Section>();
  #spare: Buffer[] = [];
  #started: number[] = [];
  #done: number[] = [];
  #queries: QueryResult[] = [];
  #finished: TurnFinished[] = [];
  #events: Section = { buf: Buffer.allocUnsafe(INITIAL_SECTION_BYTES), len: 0 };
  #eventAgents: string[] = [];
  #scheduled = false;
  /** Someone watches the agent event stream (main says so); agent events are encoded only then. */
  observing = false;
  readonly #flushNow = (): void => this.flush();

  constructor(post: PostBatch) {
    this.#post = post;
  }

  /** Encodes `value` as one frame for request `req` on connection `conn`. */
  frame(conn: number, req: number, last: boolean, value: unknown): void {
    const body = packr.pack(value); // a view into msgpackr's pool: copied below
    const section = this.#section(conn, HEADER_BYTES + body.length);
    const buf = section.buf;
    let at = section.len;
    buf.writeUInt32BE(body.length, at);
    buf.writeUInt32BE(req >>> 0, at + 4);
    buf[at + 8] = last ? FLAG_LAST : 0;
    at += HEADER_BYTES;
    buf.set(body, at);
    section.len = at + body.length;
    if (last) this.#done.push(conn, req);
    this.#schedule();
  }

  /** Marks a request's first frame as part of this batch (main tracks it for crash recovery). */
  started(conn: number, req: number): void {
    this.#started.push(conn, req);
  }

  /** Encodes one agent event, once, for every observer main will write it to. */
  agentEvent(agent: string, value: unknown): void {
    const body = packr.pack(value);
    const ev = this.#events;
    if (ev.len + 4 + body.length > ev.buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(ev.buf.length * 2, ev.len + 4 + body.length));
      ev.buf.copy(grown, 0, 0, ev.len);
      ev.buf = grown;
    }
    ev.buf.writeUInt32BE(body.length, ev.len);
    ev.buf.set(body, ev.len + 4);
    ev.len += 4 + body.length;
    this.#eventAgents.push(agent);
    this.#schedule();
  }

  /** A turn finished: main publishes `agent:<name>:done`. */
  finished(record: TurnFinished): void {
    this.#finished.push(record);
    this.#schedule();
  }

  query(result: QueryResult): void {
    this.#queries.push(result);
    this.#schedule();
  }

  #section(conn: number, extra: number): Section {
    let section = this.#sections.get(conn);
    if (section === undefined) {
      const size = Math.max(INITIAL_SECTION_BYTES, extra);
      const spare = this.#spare.pop();
      section = { buf: spare !== undefined && spare.length >= size ? spare : Buffer.allocUnsafe(size), len: 0 };
      this.#sections.set(conn, section);
    } else if (section.len + extra > section.buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(section.buf.length * 2, section.len + extra));
      section.buf.copy(grown, 0, 0, section.len);
      section.buf = grown;
    }
    return section;
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    // setImmediate, not a microtask: a turn's frames are produced across many
    // microtasks of one event-loop turn, and all of them should share a batch.
    setImmediate(this.#flushNow);
  }

  flush(): void {
    this.#scheduled = false;
    let total = 0;
    for (const s of this.#sections.values()) total += SECTION_HEADER_BYTES + s.len;
    let b: ArrayBuffer | null = null;
    if (total > 0) {
      b = new ArrayBuffer(total);
      const out = Buffer.from(b);
      let at = 0;
      for (const [conn, s] of this.#sections) {
        out.writeUInt32BE(conn, at);
        out.writeUInt32BE(s.len, at + 4);
        s.buf.copy(out, at + SECTION_HEADER_BYTES, 0, s.len);
        at += SECTION_HEADER_BYTES + s.len;
        if (this.#spare.length < SPARE_LIMIT) this.#spare.push(s.buf);
      }
      this.#sections.clear();
    }
    let ev: ArrayBuffer | null = null;
    if (this.#events.len > 0) {
      ev = new ArrayBuffer(this.#events.len);
      this.#events.buf.copy(Buffer.from(ev), 0, 0, this.#events.len);
      this.#events.len = 0;
    }
    if (b === null && ev === null && this.#done.length === 0 && this.#started.length === 0 && this.#queries.length === 0 && this.#finished.length === 0) return;
    const batch: FrameBatch = {
      t: 'frames',
      b,
      started: this.#started,
      done: this.#done,
      queries: this.#queries,
      ev,
      evAgents: this.#eventAgents,
      finished: this.#finished,
    };
    this.#started = [];
    this.#done = [];
    this.#queries = [];
    this.#eventAgents = [];
    this.#finished = [];
    const transfer: ArrayBuffer[] = [];
    if (b !== null) transfer.push(b);
    if (ev !== null) transfer.push(ev);
    this.#post(batch, transfer);
  }
}
