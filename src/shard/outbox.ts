/**
 * The shard's side of the frame channel. Reply bodies are encoded here, as
 * complete wire frames, and every frame produced in one event-loop turn is
 * coalesced into one section per connection inside one transferred buffer.
 * Main then writes each section with one call and decodes nothing.
 */
import { packr } from '../shared/codec.ts';
import type { AgentEventBody, FrameBody } from '../shared/wire/frames.ts';
import {
  FLAG_LAST,
  GrowableBytes,
  HEADER_BYTES,
  SECTION_HEADER_BYTES,
  EVENT_LENGTH_BYTES,
  writeEventEntry,
  writeFrame,
  writeFrameHeader,
  writeSectionHeader,
} from '../shared/byte-layouts.ts';
import { TextDeltaBody } from './text-delta-body.ts';
import { callMeter } from './call-meter.ts';
import { OUTPUT_REUSE_MAX_BYTES, outputReturns } from '../shared/threads/output-reuse.ts';
import { outcomeCode, type ActiveAnswer, type FrameBatch, type RunList, type TurnError, type TurnFinished, type TurnOutcomeName } from '../shared/threads/shard-messages.ts';

const INITIAL_SECTION_BYTES = 4096;
/** Section buffers kept for reuse between flushes. */
const SPARE_LIMIT = 64;
/** A buffer grown past this for one big batch is dropped, not kept: memory returns after a big reply. */
const KEEP_BUFFER_BYTES = 1024 * 1024;
/**
 * Bytes of sections buffers main handed back kept for the next batches: a
 * stream has a few in flight at once, and an idle shard holds no more.
 */
const REUSABLE_BYTES = 4 * 1024 * 1024;

export type PostBatch = (batch: FrameBatch, transfer: ArrayBuffer[]) => void;

/** What the job runner and the shard's message handler need of the outbox (tests fake it). */
export interface FrameOut {
  /** Someone watches the agent event stream; agent events are encoded only then. */
  observing: boolean;
  /** Agents whose `agent:<name>:done` has subscribers in main (DoneWatch): `finished` is sent only for them. */
  doneWatched: { has(agent: string): boolean };
  /** Counts the batches handed to main: replies merge deltas produced within one batch (ChunkCoalescer). */
  readonly batches?: number;
  frame(conn: number, req: number, last: boolean, value: FrameBody): void;
  /** A frame `{stream: {<name>: {content, seq}}}` that is not the request's last (a text delta, however long). */
  textDelta(conn: number, req: number, name: string, content: string, seq: number): void;
  started(conn: number, req: number): void;
  agentEvent(agent: string, value: AgentEventBody): void;
  finished(record: TurnFinished): void;
  /** A turn (by its seq) started running / sent its last reply: main tracks open turns for its watchdog. */
  turnStarted(seq: number): void;
  /** `error`: what the client was told, when the turn failed with an error. */
  turnEnded(seq: number, outcome: TurnOutcomeName, error?: { code: number; message: string }): void;
  activeAnswer(answer: ActiveAnswer): void;
  runList(answer: RunList): void;
  purged(id: number): void;
  /** A commit is due in this event-loop turn (turn-writer.ts): the frames it releases should go in this batch. */
  holdForCommit?(): void;
}

export class Outbox implements FrameOut {
  readonly #post: PostBatch;
  #sections = new Map<number, GrowableBytes>();
  #spare: Buffer[] = [];
  /** Sections buffers main handed back once written (OutputBuffers), smallest first. */
  #reusable: ArrayBuffer[] = [];
  #reusableBytes = 0;
  #started: number[] = [];
  #done: number[] = [];
  #activeAnswers: ActiveAnswer[] = [];
  #runLists: RunList[] = [];
  #purged: number[] = [];
  #finished: TurnFinished[] = [];
  #turnsStarted: number[] = [];
  #turnsEnded: number[] = [];
  #turnErrors: TurnError[] = [];
  readonly #events = new GrowableBytes(Buffer.allocUnsafe(INITIAL_SECTION_BYTES));
  #eventAgents: string[] = [];
  #scheduled = false;
  /** The scheduled flush waits one event-loop turn more (holdForCommit); at most once, so steady commits never starve it. */
  #held: 'no' | 'waiting' | 'waited' = 'no';
  /** Someone watches the agent event stream (main says so); agent events are encoded only then. */
  observing = false;
  doneWatched: ReadonlySet<string> = new Set();
  batches = 0;
  readonly #flushNow = (): void => {
    if (this.#held !== 'waiting') return this.flush();
    this.#held = 'waited';
    setImmediate(this.#flushNow);
  };

  constructor(post: PostBatch) {
    this.#post = post;
    callMeter.onRecord = () => this.#schedule();
  }

  /** Encodes `value` as one frame for request `req` on connection `conn`. */
  frame(conn: number, req: number, last: boolean, value: FrameBody): void {
    const body = packr.pack(value); // a view into msgpackr's pool: copied below
    const section = this.#section(conn, HEADER_BYTES + body.length);
    section.len = writeFrame(section.buf, section.len, req, last ? FLAG_LAST : 0, body);
    if (last) this.#done.push(conn, req);
    this.#schedule();
  }

  /** Encodes a text delta's frame straight into the section (see TextDeltaBody: no msgpackr buffer per delta). */
  textDelta(conn: number, req: number, name: string, content: string, seq: number): void {
    const body = new TextDeltaBody(name, content, seq);
    const section = this.#section(conn, HEADER_BYTES + body.length);
    writeFrameHeader(section.buf, section.len, body.length, req, 0);
    section.len = body.writeTo(section.buf, section.len + HEADER_BYTES);
    this.#schedule();
  }

  /** Marks a request's first frame as part of this batch (main tracks it for crash recovery). */
  started(conn: number, req: number): void {
    this.#started.push(conn, req);
  }

  /** Encodes one agent event, once, for every observer main will write it to. */
  agentEvent(agent: string, value: AgentEventBody): void {
    const body = packr.pack(value);
    this.#events.reserve(EVENT_LENGTH_BYTES + body.length);
    this.#events.len = writeEventEntry(this.#events.buf, this.#events.len, body);
    this.#eventAgents.push(agent);
    this.#schedule();
  }

  /** A turn finished: main publishes `agent:<name>:done`. */
  finished(record: TurnFinished): void {
    this.#finished.push(record);
    this.#schedule();
  }

  turnStarted(seq: number): void {
    this.#turnsStarted.push(seq);
    this.#schedule();
  }

  turnEnded(seq: number, outcome: TurnOutcomeName, error?: { code: number; message: string }): void {
    this.#turnsEnded.push(seq, outcomeCode(outcome));
    if (error !== undefined) this.#turnErrors.push({ seq, code: error.code, message: error.message });
    this.#schedule();
  }

  activeAnswer(answer: ActiveAnswer): void {
    this.#activeAnswers.push(answer);
    this.#schedule();
  }

  runList(answer: RunList): void {
    this.#runLists.push(answer);
    this.#schedule();
  }

  purged(id: number): void {
    this.#purged.push(id);
    this.#schedule();
  }

  #section(conn: number, extra: number): GrowableBytes {
    let section = this.#sections.get(conn);
    if (section === undefined) {
      const size = Math.max(INITIAL_SECTION_BYTES, extra);
      const spare = this.#spare.pop();
      section = new GrowableBytes(spare !== undefined && spare.length >= size ? spare : Buffer.allocUnsafe(size));
      this.#sections.set(conn, section);
    } else {
      section.reserve(extra);
    }
    return section;
  }

  /** Keeps sections buffers main has finished writing, for later batches. */
  reuse(buffers: readonly ArrayBuffer[]): void {
    for (const b of buffers) {
      if (this.#reusableBytes + b.byteLength > REUSABLE_BYTES) continue;
      this.#reusable.push(b);
      this.#reusableBytes += b.byteLength;
    }
    this.#reusable.sort((a, b) => a.byteLength - b.byteLength);
  }

  /**
   * A buffer for `total` bytes: when main will hand it back (`returns`), a
   * handed-back one that fits, else a new one rounded up to a power of two,
   * so that the next batches of about the same size fit it; else one of the
   * exact size, so a batch main keeps never takes a handed-back buffer.
   */
  #sectionsBuffer(total: number, returns: boolean): ArrayBuffer {
    if (!returns) return new ArrayBuffer(total);
    const at = this.#reusable.findIndex((b) => b.byteLength >= total);
    if (at >= 0) {
      const [reused] = this.#reusable.splice(at, 1);
      this.#reusableBytes -= reused!.byteLength;
      return reused!;
    }
    return new ArrayBuffer(Math.min(OUTPUT_REUSE_MAX_BYTES, 2 ** Math.ceil(Math.log2(total))));
  }

  /**
   * A commit was scheduled after this outbox's flush, in the same event-loop
   * turn: the flush waits for the next one, so that the `end` frames the
   * commit releases travel in the same batch as the frames before them. A
   * lone turn then wakes main once, not twice (its frames, then its `end`).
   */
  holdForCommit(): void {
    if (this.#scheduled && this.#held === 'no') this.#held = 'waiting';
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    // setImmediate, not a microtask: a turn's frames are produced across many
    // microtasks of one event-loop turn, and all of them should share a batch.
    setImmediate(this.#flushNow);
  }

  /** Packs every section into one buffer to transfer, with the bytes used and whether main hands it back; null when there are none. */
  #takeSections(): { packed: ArrayBuffer; bytes: number; returns: boolean } | null {
    let total = 0;
    for (const s of this.#sections.values()) total += SECTION_HEADER_BYTES + s.len;
    if (total === 0) return null;
    const returns = outputReturns(total, this.#sections.size);
    const packed = this.#sectionsBuffer(total, returns);
    const out = Buffer.from(packed, 0, total);
    let at = 0;
    for (const [conn, s] of this.#sections) {
      writeSectionHeader(out, at, conn, s.len);
      s.buf.copy(out, at + SECTION_HEADER_BYTES, 0, s.len);
      at += SECTION_HEADER_BYTES + s.len;
      if (this.#spare.length < SPARE_LIMIT && s.buf.length <= KEEP_BUFFER_BYTES) this.#spare.push(s.buf);
    }
    this.#sections.clear();
    return { packed, bytes: total, returns };
  }

  #takeEvents(): ArrayBuffer | null {
    if (this.#events.len === 0) return null;
    const events = new ArrayBuffer(this.#events.len);
    this.#events.buf.copy(Buffer.from(events), 0, 0, this.#events.len);
    this.#events.len = 0;
    if (this.#events.buf.length > KEEP_BUFFER_BYTES) this.#events.buf = Buffer.allocUnsafe(INITIAL_SECTION_BYTES);
    return events;
  }

  get #empty(): boolean {
    return this.#done.length === 0 && this.#started.length === 0 && this.#activeAnswers.length === 0 && this.#runLists.length === 0 && this.#purged.length === 0 && this.#finished.length === 0 &&
      this.#turnsStarted.length === 0 && this.#turnsEnded.length === 0 && !callMeter.pending;
  }

  flush(): void {
    this.#scheduled = false;
    this.#held = 'no';
    this.batches++;
    const sections = this.#takeSections();
    const agentEvents = this.#takeEvents();
    if (sections === null && agentEvents === null && this.#empty) return;
    const batch: FrameBatch = {
      type: 'frames',
      sections: sections?.packed ?? null,
      sectionsBytes: sections?.bytes ?? 0,
      sectionsReturn: sections?.returns ?? false,
      started: this.#started,
      done: this.#done,
      activeAnswers: this.#activeAnswers,
      runLists: this.#runLists,
      purged: this.#purged,
      agentEvents,
      agentEventAgents: this.#eventAgents,
      finished: this.#finished,
      turnsStarted: this.#turnsStarted,
      turnsEnded: this.#turnsEnded,
      tallies: callMeter.takeTallies(),
      spans: callMeter.takeSpans(),
      turnErrors: this.#turnErrors,
    };
    this.#turnsStarted = [];
    this.#turnsEnded = [];
    if (this.#turnErrors.length > 0) this.#turnErrors = [];
    this.#started = [];
    this.#done = [];
    this.#activeAnswers = [];
    if (this.#runLists.length > 0) this.#runLists = [];
    this.#purged = [];
    this.#eventAgents = [];
    this.#finished = [];
    const transfer: ArrayBuffer[] = [];
    if (sections !== null) transfer.push(sections.packed);
    if (agentEvents !== null) transfer.push(agentEvents);
    this.#post(batch, transfer);
  }
}
