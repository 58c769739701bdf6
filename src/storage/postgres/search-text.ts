/**
 * The text PostgreSQL indexes and matches, made the same way for a message
 * and for a query so that both see the words PROTOCOL §4 defines: runs of
 * letters, digits and `_`, lower-cased, Latin diacritics removed (as SQLite's
 * unicode61 tokenizer does). PostgreSQL's own parser would keep `example.com`
 * or `3.14` as one lexeme, so it is only ever given words and spaces.
 */

/** How much of one message is indexed: a tsvector holds at most 1 MB, and a longer message must still be stored. */
export const INDEXED_CHARS = 100_000;

const WORD = /[\p{L}\p{N}_]+/gu;
const LATIN_DIACRITICS = /[\u0300-\u036f]/g;

function fold(text: string): string {
  return text.normalize('NFD').replace(LATIN_DIACRITICS, '').normalize('NFC').toLowerCase();
}

/** A message's searchable text as space-separated words, in order (repeats count toward ranking). */
export function indexedWords(text: string): string {
  return (fold(text.slice(0, INDEXED_CHARS)).match(WORD) ?? []).join(' ');
}

/**
 * A websearch_to_tsquery string ORing the query's words, each quoted: in that
 * syntax a quoted word is a phrase, never an operator (`or`, `-`, `"`).
 */
export function tsQueryText(words: readonly string[]): string | null {
  const folded = [...new Set(words.flatMap((w) => fold(w).match(WORD) ?? []))];
  return folded.length === 0 ? null : folded.map((w) => `"${w}"`).join(' or ');
}
