/**
 * BM25 over a bounded set of messages, computed here instead of by FTS5's
 * bm25(). FTS5's bm25() counts every match of each query word (its inverse
 * document frequency) on every search: about 25-50 ns per match, so a common
 * word's search grew with the data however few rows it ranked. Here the
 * count stops at IDF_COUNT_CAP: up to it, the count is exact and the score is
 * FTS5's to rounding; past it, a word's frequency among the newest messages
 * stands for its frequency overall (the weight follows the count's
 * logarithm, so a count off by some percent moves it by much less). The
 * formula is FTS5's (fts5_aux.c, fts5Bm25Function): k1 1.2, b 0.75, the
 * document's length and the average over all its columns, each word's
 * column frequencies weighted, a non-positive IDF raised to 1e-6.
 */
import type { Db } from './db.ts';
import { SEARCH_CANDIDATES } from '../search-rules.ts';

/**
 * Matches of one word counted exactly before its document frequency is
 * estimated: as many as ranking looks at, so that a one-word search's walk
 * for its candidates counts its word too (search.ts).
 */
export const IDF_COUNT_CAP = SEARCH_CANDIDATES;

/** A word's newest matches, walked newest first up to IDF_COUNT_CAP: how many, and the rowid of the oldest of them. */
export interface NewestMatches {
  n: number;
  last: number | null;
}

const K1 = 1.2;
const B = 0.75;

/** An FTS5 table this scores, and the weights of its indexed columns (in order; unindexed columns weigh nothing). */
export interface FtsTable {
  name: 'messages_fts' | 'conversations_fts';
  weights: readonly number[];
}

/** messages_fts: user text 1.5, assistant text 1, tool names 1. */
export const MESSAGES_FTS: FtsTable = { name: 'messages_fts', weights: [1.5, 1, 1] };
/** conversations_fts: title and compaction summary, 1 each (bm25()'s default). */
export const CONVERSATIONS_FTS: FtsTable = { name: 'conversations_fts', weights: [1, 1] };

const LATIN_DIACRITICS = /[\u0300-\u036f]/g;
const NON_ASCII = /[^\u0000-\u007f]/;
/** unicode61's token characters: letters, numbers, private use; everything else separates. */
const TOKEN = /[\p{L}\p{N}\p{Co}]+/gu;

const FINAL_SIGMA = /ς/g;

/**
 * The text tokens are read from: Latin diacritics removed, lower-cased, and
 * final sigma folded to σ as unicode61 folds it (toLowerCase makes Σ a ς at
 * a word's end, so a word cut after its Σ would fold otherwise in pieces).
 */
function folded(text: string): string {
  if (!NON_ASCII.test(text)) return text.toLowerCase();
  return text.normalize('NFD').replace(LATIN_DIACRITICS, '').normalize('NFC').toLowerCase().replace(FINAL_SIGMA, 'σ');
}

/** unicode61 with remove_diacritics: tokens lower-cased, Latin diacritics removed. */
export function tokens(text: string): string[] {
  return folded(text).match(TOKEN) ?? [];
}

/** A text as one string, or in pieces (a big message read in slices): tokens are counted the same either way. */
export type TextPieces = string | Iterable<string>;

/**
 * A token still open at the end of a piece is held over and joined to the
 * next piece, up to this many characters or the longest query token's
 * length, whichever is more; a longer one can equal no query token, so it is
 * counted then, as one token, and its rest is skipped.
 */
export const MAX_HELD_TOKEN = 4096;
const LEADING_TOKEN = new RegExp(`^${TOKEN.source}`, 'u');

/** Tokens of a folded text, in order; one regex for every count (a count runs to its end before another starts). */
const TOKEN_SCAN = new RegExp(TOKEN.source, TOKEN.flags);

/**
 * How often each token sequence of `phrases` occurs in a text, and how many
 * tokens it has. Tokens are read one at a time (an array of a 16 MiB
 * message's 8M tokens would cost many times the message), and a big text
 * arrives in pieces, so that only one piece is a string at a time.
 */
class PhraseCount {
  length = 0;
  readonly counts: number[];
  readonly #phrases: readonly (readonly string[])[];
  readonly #span: number;
  /** The last `span` tokens, oldest first at `length % span`. */
  readonly #recent: string[];
  /** The longest open token held over to the next piece (MAX_HELD_TOKEN). */
  readonly #holdUpTo: number;

  constructor(phrases: readonly (readonly string[])[]) {
    this.#phrases = phrases;
    this.counts = phrases.map(() => 0);
    this.#span = Math.max(0, ...phrases.map((p) => p.length));
    this.#recent = new Array<string>(this.#span);
    this.#holdUpTo = Math.max(MAX_HELD_TOKEN, ...phrases.flat().map((t) => t.length));
  }

  static of(text: TextPieces, phrases: readonly (readonly string[])[]): PhraseCount {
    const count = new PhraseCount(phrases);
    if (typeof text === 'string') count.#addText(text);
    else count.#addPieces(text);
    return count;
  }

  #addText(text: string): void {
    const open = this.#addAllButOpen(folded(text));
    if (open !== '') this.#add(open);
  }

  /** A token still open at the end of a piece is held over and joined to the next one (or counted as MAX_HELD_TOKEN says). */
  #addPieces(pieces: Iterable<string>): void {
    let held = '';
    let skipping = false; // inside a token too long to hold, already counted
    for (const piece of pieces) {
      let source = folded(held + piece);
      held = '';
      if (skipping) {
        const rest = LEADING_TOKEN.exec(source)?.[0].length ?? 0;
        if (rest === source.length) continue;
        source = source.slice(rest);
        skipping = false;
      }
      held = this.#addAllButOpen(source);
      if (held.length > this.#holdUpTo) {
        this.#add(held);
        held = '';
        skipping = true;
      }
    }
    if (held !== '') this.#add(held);
  }

  /** Adds every token of `source` but one that runs to its very end, which it returns (it may go on in the next piece). */
  #addAllButOpen(source: string): string {
    TOKEN_SCAN.lastIndex = 0;
    for (let m = TOKEN_SCAN.exec(source); m !== null; m = TOKEN_SCAN.exec(source)) {
      if (m.index + m[0].length === source.length) return m[0];
      this.#add(m[0]);
    }
    return '';
  }

  #add(token: string): void {
    const span = this.#span;
    if (span > 0) this.#recent[this.length % span] = token;
    this.length++;
    for (let i = 0; i < this.#phrases.length; i++) {
      const phrase = this.#phrases[i]!;
      if (phrase.length === 0 || phrase.length > this.length) continue;
      const first = this.length - phrase.length;
      let j = 0;
      while (j < phrase.length && this.#recent[(first + j) % span] === phrase[j]) j++;
      if (j === phrase.length) this.counts[i]!++;
    }
  }
}

/** unicode61's token characters in ASCII: digits and letters (lower case here). */
function isAsciiTokenUnit(unit: number): boolean {
  return (unit >= 0x30 && unit <= 0x39) || (unit >= 0x61 && unit <= 0x7a);
}

/** 1 for each ASCII unit isAsciiTokenUnit accepts, else 0: a table costs less than its comparisons in a text-long loop. */
const ASCII_TOKEN_UNITS = Uint8Array.from({ length: 0x80 }, (_, unit) => (isAsciiTokenUnit(unit) ? 1 : 0));

/**
 * A lower-cased ASCII text's tokens are the runs of [0-9a-z]: PhraseCount's
 * counts, found without a string per token (a token starts where a token
 * unit follows another unit or the start).
 */
function asciiTokenCount(lower: string): number {
  let n = 0;
  let previous = 0;
  for (let i = 0; i < lower.length; i++) {
    const token = ASCII_TOKEN_UNITS[lower.charCodeAt(i)]!;
    n += token & ~previous;
    previous = token;
  }
  return n;
}

/** Where the whole token `token` ends if it starts at `at` of `lower`, else -1. */
function tokenEndAt(lower: string, at: number, token: string): number {
  const end = at + token.length;
  if (!lower.startsWith(token, at) || isAsciiTokenUnit(lower.charCodeAt(end))) return -1;
  return at === 0 || !isAsciiTokenUnit(lower.charCodeAt(at - 1)) ? end : -1;
}

/** How often `phrase` (its tokens, one after another, separated by anything but tokens) occurs in a lower-cased ASCII text. */
function asciiPhraseCount(lower: string, phrase: readonly string[]): number {
  if (phrase.length === 0) return 0;
  let n = 0;
  for (let at = lower.indexOf(phrase[0]!); at !== -1; at = lower.indexOf(phrase[0]!, at + 1)) {
    let end = tokenEndAt(lower, at, phrase[0]!);
    for (let t = 1; t < phrase.length && end !== -1; t++) {
      while (end < lower.length && !isAsciiTokenUnit(lower.charCodeAt(end))) end++;
      end = tokenEndAt(lower, end, phrase[t]!);
    }
    if (end !== -1) n++;
  }
  return n;
}

/** Reads a SQLite varint (as FTS5 writes them) at `at`; returns the value and the next offset. */
function varint(buf: Uint8Array, at: number): [number, number] {
  let v = 0;
  for (let i = 0; i < 8; i++) {
    const byte = buf[at + i]!;
    v = v * 128 + (byte & 0x7f);
    if ((byte & 0x80) === 0) return [v, at + i + 1];
  }
  return [v * 256 + buf[at + 8]!, at + 9];
}

/** The lowest and highest rowid an FTS5 table holds (null when empty), read once per scorer. */
interface RowidSpan {
  lo: number | null;
  hi: number | null;
}

export class Bm25Stats {
  readonly #averages;
  readonly #lowest;
  readonly #highest;
  readonly #capped;

  readonly #weights: readonly number[];

  constructor(db: Db, table: FtsTable) {
    const t = table.name;
    this.#weights = table.weights;
    // FTS5's averages record (rowid 1 of its data table): the row count, then each column's total tokens.
    this.#averages = db.prepare<[], { block: Buffer }>(`SELECT block FROM ${t}_data WHERE id = 1`);
    // Two statements: SQLite reads min() or max() from the end of the B-tree only when a query asks for one alone.
    this.#lowest = db.prepare<[], { id: number }>(`SELECT min(id) AS id FROM ${t}_docsize`);
    this.#highest = db.prepare<[], { id: number }>(`SELECT max(id) AS id FROM ${t}_docsize`);
    // One walk of the newest matches, up to the cap: how many, and the oldest of them.
    this.#capped = db.prepare<[string, number], { n: number; last: number | null }>(
      `SELECT count(*) AS n, min(rowid) AS last FROM (SELECT rowid FROM ${t} WHERE ${t} MATCH ? ORDER BY rowid DESC LIMIT ?)`,
    );
  }

  /**
   * A scorer for `words` (each one FTS5 string: a phrase of its tokens) of
   * a row given as its indexed columns' text, exactly as indexed, each
   * whole or in pieces. Costs at most IDF_COUNT_CAP steps per word, however
   * many rows match, and none for a word in `walked` (its matches already
   * walked by the caller, newest first, up to IDF_COUNT_CAP).
   */
  scorer(words: readonly string[], walked?: ReadonlyMap<string, NewestMatches>): (columns: readonly TextPieces[]) => number {
    const block = this.#averages.get()?.block;
    let rows = 0;
    let totalTokens = 0;
    if (block !== undefined) {
      let at = 0;
      [rows, at] = varint(block, 0);
      while (at < block.length) {
        let n: number;
        [n, at] = varint(block, at);
        totalTokens += n;
      }
    }
    const avgdl = rows > 0 ? totalTokens / rows : 1;
    const phrases = words.map((w) => tokens(w));
    let span: RowidSpan | undefined;
    const rowidSpan = (): RowidSpan => (span ??= { lo: this.#lowest.get()?.id ?? null, hi: this.#highest.get()?.id ?? null });
    const idf = words.map((w) => {
      const hits = this.#documentFrequency(walked?.get(w) ?? this.#capped.get(`"${w}"`, IDF_COUNT_CAP)!, rows, rowidSpan);
      const v = Math.log((rows - hits + 0.5) / (hits + 0.5));
      return v > 0 ? v : 1e-6;
    });
    const weights = this.#weights;
    const freqs = new Float64Array(phrases.length);
    return (texts) => {
      freqs.fill(0);
      let length = 0;
      for (let c = 0; c < texts.length; c++) {
        const text = texts[c]!;
        // Most texts are small and ASCII: counted without a string per token (most of a search's time went there).
        if (typeof text === 'string' && !NON_ASCII.test(text)) {
          const lower = text.toLowerCase();
          length += asciiTokenCount(lower);
          for (let i = 0; i < phrases.length; i++) freqs[i]! += weights[c]! * asciiPhraseCount(lower, phrases[i]!);
        } else {
          const counted = PhraseCount.of(text, phrases);
          length += counted.length;
          for (let i = 0; i < phrases.length; i++) freqs[i]! += weights[c]! * counted.counts[i]!;
        }
      }
      let score = 0;
      for (let i = 0; i < phrases.length; i++) {
        const freq = freqs[i]!;
        score += idf[i]! * ((freq * (K1 + 1)) / (freq + K1 * (1 - B + (B * length) / avgdl)));
      }
      return score;
    };
  }

  /** How many rows match a word whose newest matches are `newest`: exact up to IDF_COUNT_CAP, beyond it estimated from their density. */
  #documentFrequency(newest: NewestMatches, rows: number, rowidSpan: () => RowidSpan): number {
    const { n, last } = newest;
    if (n < IDF_COUNT_CAP || last === null) return n;
    const { lo, hi } = rowidSpan();
    if (lo === null || hi === null) return IDF_COUNT_CAP;
    // The newest IDF_COUNT_CAP matches lie in rowids [last, hi]: assume the word is as frequent over the whole span.
    return Math.min(rows, Math.round((IDF_COUNT_CAP * (hi - lo + 1)) / (hi - last + 1)));
  }
}
