/**
 * The frames a detached run keeps so a client can rejoin it (join_run):
 * its events as the stream sent them, with their seqs. Text deltas of one
 * event in a row are kept as one entry of pieces, so a rejoin gets the text
 * after its last seq as one delta. Bounded: past KEPT_FRAMES frames or
 * KEPT_CHARS characters the oldest are dropped, and a join asking for them
 * is refused (PROTOCOL §4.13 states both caps).
 */

/** Most frames one run keeps. */
export const KEPT_FRAMES = 65_536;
/** Most characters of text and tool output one run keeps (about 16 MiB of ASCII). */
export const KEPT_CHARS = 16 * 1024 * 1024;
/** What an event without text counts against KEPT_CHARS. */
const EVENT_CHARS = 64;

type Body = Record<string, unknown>;

/** One kept non-text frame. */
interface EventEntry {
  readonly seq: number;
  readonly name: string;
  readonly body: Body;
}

/** Text deltas of one event in a row: the pieces as sent and the seq of each. */
class TextEntry {
  readonly name: string;
  readonly pieces: string[] = [];
  readonly seqs: number[] = [];

  constructor(name: string) {
    this.name = name;
  }
}

/** Where a replay sends what it finds. */
export interface ReplaySink {
  event(name: string, body: Body): void;
  text(name: string, content: string, seq: number): void;
}

const charsOf = (body: Body): number => EVENT_CHARS + (typeof body.output === 'string' ? body.output.length : 0);

export class KeptFrames {
  readonly #entries: (EventEntry | TextEntry)[] = [];
  #frames = 0;
  #chars = 0;
  /** The oldest seq still kept. */
  #firstSeq: number;

  /** `firstSeq`: the first seq it will keep (a run resumed after a restart kept nothing before). */
  constructor(firstSeq = 1) {
    this.#firstSeq = firstSeq;
  }

  add(seq: number, name: string, body: Body): void {
    this.#entries.push({ seq, name, body });
    this.#grew(1, charsOf(body));
  }

  addText(seq: number, name: string, content: string): void {
    let last = this.#entries[this.#entries.length - 1];
    if (!(last instanceof TextEntry) || last.name !== name) this.#entries.push((last = new TextEntry(name)));
    last.pieces.push(content);
    last.seqs.push(seq);
    this.#grew(1, content.length);
  }

  /** Sends every kept frame with a seq above `afterSeq`; false when some of them were dropped (the caps). */
  replay(afterSeq: number, to: ReplaySink): boolean {
    if (afterSeq + 1 < this.#firstSeq) return false;
    for (const e of this.#entries) {
      if (!(e instanceof TextEntry)) {
        if (e.seq > afterSeq) to.event(e.name, e.body);
        continue;
      }
      const lastSeq = e.seqs[e.seqs.length - 1]!;
      if (lastSeq <= afterSeq) continue;
      let from = 0;
      while (e.seqs[from]! <= afterSeq) from++;
      to.text(e.name, from === 0 && e.pieces.length === 1 ? e.pieces[0]! : e.pieces.slice(from).join(''), lastSeq);
    }
    return true;
  }

  #grew(frames: number, chars: number): void {
    this.#frames += frames;
    this.#chars += chars;
    while ((this.#frames > KEPT_FRAMES || this.#chars > KEPT_CHARS) && this.#entries.length > 0) this.#dropOldest();
  }

  /** Drops the oldest entry, or half of it when it is text (a long answer is one entry). */
  #dropOldest(): void {
    const e = this.#entries[0]!;
    if (!(e instanceof TextEntry) || e.pieces.length === 1) {
      this.#entries.shift();
      this.#frames -= 1;
      this.#chars -= e instanceof TextEntry ? e.pieces[0]!.length : charsOf(e.body);
    } else {
      const n = Math.ceil(e.pieces.length / 2);
      for (const p of e.pieces.splice(0, n)) this.#chars -= p.length;
      e.seqs.splice(0, n);
      this.#frames -= n;
    }
    const next = this.#entries[0];
    // Nothing left: the first seq kept is the one after the frame just dropped, whatever seq the run began at.
    const dropped = e instanceof TextEntry ? e.seqs[0] ?? this.#firstSeq : e.seq;
    this.#firstSeq = next === undefined ? dropped + 1 : next instanceof TextEntry ? next.seqs[0]! : next.seq;
  }
}
