/**
 * The parts of session search (PROTOCOL §4) that do not depend on the store:
 * a query's words, how many candidates ranking looks at, the context
 * window's bounds and what a window shows of each message. SQLite's search
 * (search.ts) and PostgreSQL's (pg-search.ts) answer by the same rules.
 */
import { SEARCH_LIMITS } from '../shared/protocol.ts';
import type { SearchWindowMessage } from '../shared/wire/ops.ts';

/**
 * The words of a query, each quoted as an FTS5 string: operators and
 * punctuation lose all meaning. Only its first SEARCH_LIMITS.maxQueryBytes
 * count: a client's longer query is refused before it gets here, and a
 * search from inside a turn (a model's tool call, a harness) is cut.
 */
export function ftsQuery(query: string): string | null {
  const words = leadingBytes(query, SEARCH_LIMITS.maxQueryBytes).match(/[\p{L}\p{N}_]+/gu);
  if (words === null) return null;
  return [...new Set(words.map((w) => w.toLowerCase()))].map((w) => `"${w}"`).join(' OR ');
}

/** Characters a snippet shows before the match. */
const SNIPPET_LEAD = 200;

export interface Snippet {
  snippet: string;
  truncated: boolean;
}

/**
 * Lower case for finding a word, unit for unit the same length as `text`
 * (İ, whose lower case takes two units, becomes i), with final sigma as σ
 * (toLowerCase picks ς or σ by what follows, which a slice's end changes):
 * a match's place in it is its place in the text, and a slice finds what
 * the whole text finds.
 */
function matchCase(text: string): string {
  return text.replace(DOTTED_I, 'i').toLowerCase().replace(FINAL_SIGMA, 'σ');
}
const DOTTED_I = /\u0130/g;
const FINAL_SIGMA = /ς/g;

/** Where in `text` the first of `words` starts (UTF-16 units), or -1. */
function firstMatch(text: string, words: readonly string[]): number {
  const lower = matchCase(text);
  let at = -1;
  for (const w of words) {
    const i = lower.indexOf(matchCase(w));
    if (i !== -1 && (at === -1 || i < at)) at = i;
  }
  return at;
}

/** The whole characters of `text` from its start that fit in `bytes` of UTF-8. */
function leadingBytes(text: string, bytes: number): string {
  let out = '';
  let used = 0;
  for (const ch of text) {
    const n = Buffer.byteLength(ch);
    if (used + n > bytes) break;
    out += ch;
    used += n;
  }
  return out;
}

const isLowSurrogate = (unit: number): boolean => unit >= 0xdc00 && unit <= 0xdfff;

/** How many characters (code points) the first `units` UTF-16 units of `text` hold. */
function codePointsIn(text: string, units: number): number {
  let n = 0;
  for (let i = 0; i < units; i++) if (!isLowSurrogate(text.charCodeAt(i))) n++;
  return n;
}

/** The UTF-16 index `chars` characters (code points) before index `at` of `text`, or 0. */
function charsBefore(text: string, at: number, chars: number): number {
  let i = at;
  for (let n = 0; n < chars && i > 0; n++) {
    i--;
    if (i > 0 && isLowSurrogate(text.charCodeAt(i))) i--;
  }
  return i;
}

/**
 * Cuts text to at most `bytes` of UTF-8 on character boundaries, starting
 * SNIPPET_LEAD characters before the first match of any word (at the start
 * when none matches).
 */
export function snippetOf(text: string, words: readonly string[], bytes: number): Snippet {
  if (Buffer.byteLength(text) <= bytes) return { snippet: text, truncated: false };
  const at = firstMatch(text, words);
  return { snippet: leadingBytes(text.slice(at === -1 ? 0 : charsBefore(text, at, SNIPPET_LEAD)), bytes), truncated: true };
}

/**
 * A text of at most this many bytes of UTF-8 is read whole for search; a
 * bigger one is read in slices, never whole (search-texts.ts, pg-search.ts).
 */
export const WHOLE_TEXT_BYTES = 64 * 1024;

/** A read of a big text: `n` characters (code points) from character `start` (0-based), fewer at its end. */
export interface SliceRead {
  start: number;
  n: number;
}

/**
 * snippetOf for a text longer than `bytes` that is too big to read whole,
 * as the reads it needs: each yield asks for a slice and is given it. Slices
 * of `chars` overlap by the longest word, so a match across two is found;
 * the scan stops at the first slice after which no earlier match can appear.
 */
function* snippetScan(words: readonly string[], bytes: number, chars: number): Generator<SliceRead, Snippet, string> {
  const longest = Math.max(1, ...words.map((w) => w.length));
  const size = Math.max(chars, 2 * longest);
  const step = size - longest + 1;
  let at = -1;
  for (let start = 0; ; start += step) {
    const slice = yield { start, n: size };
    const i = firstMatch(slice, words);
    if (i !== -1) {
      const found = start + codePointsIn(slice, i);
      if (at === -1 || found < at) at = found;
    }
    // A later slice finds only matches from start + step on; fewer units than `size` is the text's end.
    if ((at !== -1 && at < start + step) || slice.length < size) break;
  }
  // `bytes` characters hold at least `bytes` bytes of UTF-8.
  const lead = yield { start: at === -1 ? 0 : Math.max(0, at - SNIPPET_LEAD), n: bytes };
  return { snippet: leadingBytes(lead, bytes), truncated: true };
}

/** snippetOf of a big text read by `read`, a slice at a time (SQLite). */
export function snippetOfSlices(read: (slice: SliceRead) => string, words: readonly string[], bytes: number, chars: number): Snippet {
  const scan = snippetScan(words, bytes, chars);
  for (let next = scan.next(''); ; ) {
    if (next.done) return next.value;
    next = scan.next(read(next.value));
  }
}

/** snippetOf of a big text read by `read`, a slice at a time (PostgreSQL). */
export async function snippetOfSlicesAsync(read: (slice: SliceRead) => Promise<string>, words: readonly string[], bytes: number, chars: number): Promise<Snippet> {
  const scan = snippetScan(words, bytes, chars);
  for (let next = scan.next(''); ; ) {
    if (next.done) return next.value;
    next = scan.next(await read(next.value));
  }
}

/** Characters of a big text one slice holds: at least `least`, and at most about eight slices in all (each one makes the store load the whole value). */
export function sliceChars(bytes: number, least: number): number {
  return Math.max(least, Math.ceil(bytes / 8));
}

/**
 * How many matches ranking looks at: the newest this many messages (by
 * storing order), and the newest this many conversations whose title or
 * summary matches, ranked among themselves, before one hit per conversation
 * is chosen. A search's cost is bounded by this, not by how many messages
 * match: a common word may match millions. An older match is found whenever
 * fewer than this many newer ones match.
 */
export const SEARCH_CANDIDATES = 200;

/** A query's distinct lower-cased words (letters, digits, `_`), or null when it has none. */
export function queryWords(query: string): string[] | null {
  const match = ftsQuery(query);
  return match === null ? null : match.split(' OR ').map((w) => w.slice(1, -1));
}

/**
 * How many messages a window shows before and after the hit: at most
 * maxWindow in all. Clamp first (a client may ask for 2^53), then trim the
 * wider side (`before` on a tie).
 */
export function windowSides(contextBefore: number, contextAfter: number): { before: number; after: number } {
  let before = Math.min(contextBefore, SEARCH_LIMITS.maxWindow);
  let after = Math.min(contextAfter, SEARCH_LIMITS.maxWindow);
  while (before + after + 1 > SEARCH_LIMITS.maxWindow) {
    if (before >= after) before--;
    else after--;
  }
  return { before, after };
}

export interface RankedConversation {
  id: number;
  /** The conversation's best-matching message, or 0 when only its title or summary matched. */
  idx: number;
  score: number;
}

/**
 * One hit per conversation: its best message among the candidates (given
 * best first), plus its title-or-summary score (`lifts` name each
 * conversation at most once); best first, ties to the older conversation,
 * at most `limit`. One entry per conversation, built in place: a search
 * ranks up to SEARCH_CANDIDATES of them on every call.
 */
export function rankConversations(
  candidates: readonly { conversation_id: number; idx: number; score: number }[],
  lifts: readonly { id: number; score: number }[],
  limit: number,
): RankedConversation[] {
  const byId = new Map<number, RankedConversation>();
  for (const r of candidates) if (!byId.has(r.conversation_id)) byId.set(r.conversation_id, { id: r.conversation_id, idx: r.idx, score: r.score });
  for (const lift of lifts) {
    const hit = byId.get(lift.id);
    if (hit === undefined) byId.set(lift.id, { id: lift.id, idx: 0, score: lift.score });
    else hit.score += lift.score;
  }
  return [...byId.values()].sort((a, b) => b.score - a.score || a.id - b.id).slice(0, limit);
}

export interface WindowRow {
  idx: number;
  role: SearchWindowMessage['role'];
  content: string;
  name: string | null;
  tool_calls: string | null;
}

/**
 * What a window shows of a stored message, with `snippet` making its
 * snippet (from its text, whole or in slices). Tool output may hold
 * secrets: a tool message shows its tool's name only.
 */
export function windowEntry(m: Omit<WindowRow, 'content'>, snippet: () => Snippet): SearchWindowMessage {
  const shown = m.role === 'tool' ? { snippet: '', truncated: false } : snippet();
  const toolName = m.role === 'tool' ? (m.name ?? '') : m.tool_calls !== null ? (JSON.parse(m.tool_calls) as { name: string }[]).map((t) => t.name).join(',') : '';
  return { role: m.role, msg_idx: m.idx, snippet: shown.snippet, truncated: shown.truncated, tool_name: toolName };
}
