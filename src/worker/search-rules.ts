/**
 * The parts of session search (PROTOCOL §4) that do not depend on the store:
 * a query's words, how many candidates ranking looks at, the context
 * window's bounds and what a window shows of each message. SQLite's search
 * (search.ts) and PostgreSQL's (pg-search.ts) answer by the same rules.
 */
import { SEARCH_LIMITS } from '../shared/protocol.ts';
import type { SearchWindowMessage } from '../shared/wire/ops.ts';

/** The words of a query, each quoted as an FTS5 string: operators and punctuation lose all meaning. */
export function ftsQuery(query: string): string | null {
  const words = query.match(/[\p{L}\p{N}_]+/gu);
  if (words === null) return null;
  return [...new Set(words.map((w) => w.toLowerCase()))].map((w) => `"${w}"`).join(' OR ');
}

/** Characters a snippet shows before the match. */
export const SNIPPET_LEAD = 200;

export interface Snippet {
  snippet: string;
  truncated: boolean;
}

/** Where in `lower` (a lower-cased text) the first of `words` starts, or -1. */
function firstMatch(lower: string, words: readonly string[]): number {
  let at = -1;
  for (const w of words) {
    const i = lower.indexOf(w);
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

/** How many characters (code points) the first `units` UTF-16 units of `text` hold. */
function codePointsIn(text: string, units: number): number {
  let n = 0;
  for (let i = 0; i < units; i++) {
    const c = text.charCodeAt(i);
    if (c < 0xdc00 || c > 0xdfff) n++;
  }
  return n;
}

/** Cuts text to at most `bytes` of UTF-8 around the first match of any word, on character boundaries. */
export function snippetOf(text: string, words: readonly string[], bytes: number): Snippet {
  if (Buffer.byteLength(text) <= bytes) return { snippet: text, truncated: false };
  const at = firstMatch(text.toLowerCase(), words);
  // Start a little before the match so it has context, then take whole characters up to the byte budget.
  let start = Math.max(0, at - SNIPPET_LEAD);
  if (start > 0 && /[\udc00-\udfff]/.test(text[start]!)) start--;
  return { snippet: leadingBytes(text.slice(start), bytes), truncated: true };
}

/**
 * A text of at most this many bytes of UTF-8 is read whole for search; a
 * bigger one is read in slices (SQLite, search-texts.ts) or cut by the
 * server around its first match (PostgreSQL, pg-search.ts), never whole.
 */
export const WHOLE_TEXT_BYTES = 64 * 1024;

/** The snippet of a long text already cut to start where its snippet starts (up to 200 characters before its first match). */
export function snippetOfLead(lead: string, bytes: number): Snippet {
  return { snippet: leadingBytes(lead, bytes), truncated: true };
}

/**
 * snippetOf for a text longer than `bytes` that is too big to read whole:
 * `read(start, n)` gives its characters (code points) from `start`, up to
 * `n`. Slices of `chars` overlap by the longest word, so a match across two
 * is found; the scan stops at the first slice after which no earlier match
 * can appear.
 */
export function snippetOfSlices(read: (start: number, n: number) => string, words: readonly string[], bytes: number, chars: number): Snippet {
  const longest = Math.max(1, ...words.map((w) => w.length));
  const size = Math.max(chars, 2 * longest);
  const step = size - longest + 1;
  let at = -1;
  for (let start = 0; ; start += step) {
    const slice = read(start, size);
    const i = firstMatch(slice.toLowerCase(), words);
    if (i !== -1) {
      const found = start + codePointsIn(slice, i);
      if (at === -1 || found < at) at = found;
    }
    // A later slice finds only matches from start + step on; fewer units than `size` is the text's end.
    if ((at !== -1 && at < start + step) || slice.length < size) break;
  }
  // `bytes` characters hold at least `bytes` bytes of UTF-8.
  return snippetOfLead(read(Math.max(0, at - SNIPPET_LEAD), bytes), bytes);
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
 * best first), plus its title-or-summary score; best first, ties to the
 * older conversation, at most `limit`.
 */
export function rankConversations(
  candidates: readonly { conversation_id: number; idx: number; score: number }[],
  lifts: readonly { id: number; score: number }[],
  limit: number,
): RankedConversation[] {
  const best = new Map<number, { idx: number; score: number }>();
  for (const r of candidates) if (!best.has(r.conversation_id)) best.set(r.conversation_id, { idx: r.idx, score: r.score });
  const lifted = new Map(lifts.map((r) => [r.id, r.score]));
  return [...new Set([...best.keys(), ...lifted.keys()])]
    .map((id) => ({ id, idx: best.get(id)?.idx ?? 0, score: (best.get(id)?.score ?? 0) + (lifted.get(id) ?? 0) }))
    .sort((a, b) => b.score - a.score || a.id - b.id)
    .slice(0, limit);
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
