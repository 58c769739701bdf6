/**
 * Session search over stored conversations (PROTOCOL §4): FTS5 with bm25,
 * one hit per conversation, best first. User text weighs 1.5, assistant
 * text and tool names 1; a match in the title or the compaction summary
 * lifts its conversation. A query is words, never FTS5 syntax.
 */
import type { Db } from '../shared/db.ts';
import { SEARCH_LIMITS } from '../shared/protocol.ts';
import type { SearchOptions } from '../shared/threads.ts';
import type { SearchWindowMessage, SessionHit } from '../shared/wire/ops.ts';
import { SearchIndex } from './search-index.ts';

export type { SearchOptions };

export type { SessionHit, SearchWindowMessage as WindowMessage };


/** Weights of messages_fts columns for bm25: user_text, assistant_text, tool_names (then two unindexed). */
const MESSAGE_WEIGHTS = '1.5, 1.0, 1.0, 0, 0';
/**
 * How many best-ranked messages are kept before one hit per conversation is
 * chosen: enough for 20 conversations unless one conversation holds most of
 * the best matches. Ranking in the FTS table alone, with no join, is what
 * keeps a search over 100k messages at a few milliseconds.
 */
const CANDIDATES = 500;
/** Messages indexed per transaction when a search finds the index behind. */
const CATCH_UP_BATCH = 2_000;

/** The words of a query, each quoted as an FTS5 string: operators and punctuation lose all meaning. */
export function ftsQuery(query: string): string | null {
  const words = query.match(/[\p{L}\p{N}_]+/gu);
  if (words === null) return null;
  return [...new Set(words.map((w) => w.toLowerCase()))].map((w) => `"${w}"`).join(' OR ');
}

/** Cuts text to at most `bytes` of UTF-8 around the first match of any word, on character boundaries. */
export function snippetOf(text: string, words: readonly string[], bytes: number): { snippet: string; truncated: boolean } {
  if (Buffer.byteLength(text) <= bytes) return { snippet: text, truncated: false };
  const lower = text.toLowerCase();
  let at = -1;
  for (const w of words) {
    const i = lower.indexOf(w);
    if (i !== -1 && (at === -1 || i < at)) at = i;
  }
  // Start a little before the match so it has context, then take whole characters up to the byte budget.
  let start = Math.max(0, at - 200);
  if (start > 0 && /[\udc00-\udfff]/.test(text[start]!)) start--;
  let out = '';
  let used = 0;
  for (const ch of text.slice(start)) {
    const n = Buffer.byteLength(ch);
    if (used + n > bytes) break;
    out += ch;
    used += n;
  }
  return { snippet: out, truncated: true };
}

export class SessionSearch {
  readonly #messageHits;
  readonly #filteredMessageHits;
  readonly #conversationHits;
  readonly #window;
  readonly #index: SearchIndex;

  /** `index` indexes what was committed since its last batch before each search (search-index.ts). */
  constructor(db: Db, index: SearchIndex = new SearchIndex(db)) {
    this.#index = index;
    // Ranks rowids alone, then reads the conversation and index of the best few from messages: reading
    // the FTS table's unindexed columns for every match before the sort cost about a quarter of this query.
    this.#messageHits = db.prepare<[string, number], { conversation_id: number; idx: number; score: number }>(`
      SELECT m.conversation_id, m.idx, best.score
      FROM (
        SELECT rowid, -bm25(messages_fts, ${MESSAGE_WEIGHTS}) AS score
        FROM messages_fts WHERE messages_fts MATCH ?
        ORDER BY score DESC LIMIT ?
      ) best JOIN messages m ON m.id = best.rowid
      ORDER BY best.score DESC`);
    this.#filteredMessageHits = db.prepare<[string, string | null, string | null, string | null, string | null, number], { conversation_id: number; idx: number; score: number }>(`
      SELECT conversation_id, idx, -bm25(messages_fts, ${MESSAGE_WEIGHTS}) AS score
      FROM messages_fts
      WHERE messages_fts MATCH ?
        AND conversation_id IN (SELECT id FROM conversations WHERE (? IS NULL OR agent = ?) AND (? IS NULL OR sender = ?))
      ORDER BY score DESC LIMIT ?`);
    this.#conversationHits = db.prepare<[string, string | null, string | null, string | null, string | null], { id: number; agent: string; sender: string; title: string; created_at: string; updated_at: string; score: number }>(`
      SELECT c.id, c.agent, c.sender, c.title, c.created_at, c.updated_at, -bm25(conversations_fts) AS score
      FROM conversations_fts JOIN conversations c ON c.id = conversations_fts.rowid
      WHERE conversations_fts MATCH ? AND (? IS NULL OR c.agent = ?) AND (? IS NULL OR c.sender = ?)`);
    this.#window = db.prepare<[number, number, number], { idx: number; role: SearchWindowMessage['role']; content: string; name: string | null; tool_calls: string | null }>(
      'SELECT idx, role, content, name, tool_calls FROM messages WHERE conversation_id = ? AND idx BETWEEN ? AND ? ORDER BY idx',
    );
    this.conversation = db.prepare<[number], { id: number; agent: string; sender: string; title: string; created_at: string; updated_at: string }>(
      'SELECT id, agent, sender, title, created_at, updated_at FROM conversations WHERE id = ?',
    );
  }

  readonly conversation;

  search(o: SearchOptions): SessionHit[] {
    const match = ftsQuery(o.query);
    if (match === null) return [];
    // Every turn that ended before this search is committed: index it first, so the search sees it.
    this.#index.catchUpAll(CATCH_UP_BATCH);
    const words = match.split(' OR ').map((w) => w.slice(1, -1));

    // Best message per conversation (rows come best first).
    const best = new Map<number, { idx: number; score: number }>();
    const rows =
      o.agent === null && o.sender === null
        ? this.#messageHits.all(match, CANDIDATES)
        : this.#filteredMessageHits.all(match, o.agent, o.agent, o.sender, o.sender, CANDIDATES);
    for (const r of rows) {
      if (!best.has(r.conversation_id)) best.set(r.conversation_id, { idx: r.idx, score: r.score });
    }
    // Title and summary matches add to their conversation's score.
    const lifted = new Map<number, number>();
    for (const r of this.#conversationHits.all(match, o.agent, o.agent, o.sender, o.sender)) lifted.set(r.id, r.score);

    const ranked = [...new Set([...best.keys(), ...lifted.keys()])]
      .map((id) => ({ id, idx: best.get(id)?.idx ?? 0, score: (best.get(id)?.score ?? 0) + (lifted.get(id) ?? 0) }))
      .sort((a, b) => b.score - a.score || a.id - b.id)
      .slice(0, o.limit);

    // A window holds at most maxWindow messages: clamp first (a client may ask for 2^53),
    // then trim the wider side.
    let before = Math.min(o.contextBefore, SEARCH_LIMITS.maxWindow);
    let after = Math.min(o.contextAfter, SEARCH_LIMITS.maxWindow);
    while (before + after + 1 > SEARCH_LIMITS.maxWindow) {
      if (before >= after) before--;
      else after--;
    }
    return ranked.map(({ id, idx, score }) => {
      const c = this.conversation.get(id)!;
      const window = this.#window.all(id, Math.max(0, idx - before), idx + after).map((m) => {
        // Tool output may hold secrets: it is shown by name only, never as text.
        const isTool = m.role === 'tool';
        const text = isTool ? '' : m.content;
        const { snippet, truncated } = snippetOf(text, words, SEARCH_LIMITS.snippetBytes);
        const toolName = isTool ? (m.name ?? '') : m.tool_calls !== null ? (JSON.parse(m.tool_calls) as { name: string }[]).map((t) => t.name).join(',') : '';
        return { role: m.role, msg_idx: m.idx, snippet, truncated, tool_name: toolName };
      });
      return { agent: c.agent, sender: c.sender, title: c.title, msg_idx: idx, score, created_at: c.created_at, updated_at: c.updated_at, window };
    });
  }
}
