/**
 * Session search over stored conversations (PROTOCOL §4): FTS5 with bm25,
 * one hit per conversation, best first. User text weighs 1.5, assistant
 * text and tool names 1; a match in the title or the compaction summary
 * lifts its conversation. A query is words, never FTS5 syntax.
 */
import type { Db } from '../shared/db.ts';
import type { SearchOptions } from '../shared/threads.ts';
import type { SearchWindowMessage, SessionHit } from '../shared/wire/ops.ts';
import { SearchIndex } from './search-index.ts';
import { ftsQuery, queryWords, rankConversations, SEARCH_CANDIDATES, windowEntry, windowSides, type WindowRow } from './search-rules.ts';

export type { SearchOptions };
export type { SessionHit, SearchWindowMessage as WindowMessage };
export { ftsQuery, snippetOf } from './search-rules.ts';

/** Weights of messages_fts columns for bm25: user_text, assistant_text, tool_names (then two unindexed). */
const MESSAGE_WEIGHTS = '1.5, 1.0, 1.0, 0, 0';
/** Messages indexed per transaction when a search finds the index behind. */
const CATCH_UP_BATCH = 2_000;

export class SessionSearch {
  readonly #bound;
  readonly #filteredBound;
  readonly #messageHits;
  readonly #filteredMessageHits;
  readonly #conversationHits;
  readonly #window;
  readonly #index: SearchIndex;

  /** `index` indexes what was committed since its last batch before each search (search-index.ts). */
  constructor(db: Db, index: SearchIndex = new SearchIndex(db)) {
    this.#index = index;
    // The newest SEARCH_CANDIDATES matches are the only ones ranked: the first statement finds the oldest
    // of them (FTS5 walks its doclists newest first and stops there), the second ranks only the matches
    // from it on (FTS5 seeks to the rowid bound, so bm25 scores at most SEARCH_CANDIDATES rows). Ranking
    // every match made a search's cost grow with the number of matches (PROTOCOL §4.3).
    this.#bound = db.prepare<[string, number], { rowid: number }>(
      'SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?',
    );
    this.#filteredBound = db.prepare<[string, string | null, string | null, string | null, string | null, number], { rowid: number }>(`
      SELECT rowid FROM messages_fts
      WHERE messages_fts MATCH ?
        AND conversation_id IN (SELECT id FROM conversations WHERE (? IS NULL OR agent = ?) AND (? IS NULL OR sender = ?))
      ORDER BY rowid DESC LIMIT 1 OFFSET ?`);
    // Ranks rowids alone, then reads the conversation and index of the ranked few from messages.
    this.#messageHits = db.prepare<[string, number], { conversation_id: number; idx: number; score: number }>(`
      SELECT m.conversation_id, m.idx, best.score
      FROM (
        SELECT rowid, -bm25(messages_fts, ${MESSAGE_WEIGHTS}) AS score
        FROM messages_fts WHERE messages_fts MATCH ? AND rowid >= ?
      ) best JOIN messages m ON m.id = best.rowid
      ORDER BY best.score DESC`);
    this.#filteredMessageHits = db.prepare<[string, number, string | null, string | null, string | null, string | null], { conversation_id: number; idx: number; score: number }>(`
      SELECT conversation_id, idx, -bm25(messages_fts, ${MESSAGE_WEIGHTS}) AS score
      FROM messages_fts
      WHERE messages_fts MATCH ? AND rowid >= ?
        AND conversation_id IN (SELECT id FROM conversations WHERE (? IS NULL OR agent = ?) AND (? IS NULL OR sender = ?))
      ORDER BY score DESC`);
    this.#conversationHits = db.prepare<[string, string | null, string | null, string | null, string | null], { id: number; agent: string; sender: string; title: string; created_at: string; updated_at: string; score: number }>(`
      SELECT c.id, c.agent, c.sender, c.title, c.created_at, c.updated_at, -bm25(conversations_fts) AS score
      FROM conversations_fts JOIN conversations c ON c.id = conversations_fts.rowid
      WHERE conversations_fts MATCH ? AND (? IS NULL OR c.agent = ?) AND (? IS NULL OR c.sender = ?)`);
    this.#window = db.prepare<[number, number, number], WindowRow>(
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
    const words = queryWords(o.query)!;
    const unfiltered = o.agent === null && o.sender === null;
    const oldest = unfiltered
      ? this.#bound.get(match, SEARCH_CANDIDATES - 1)
      : this.#filteredBound.get(match, o.agent, o.agent, o.sender, o.sender, SEARCH_CANDIDATES - 1);
    // Fewer matches than SEARCH_CANDIDATES: every one is ranked.
    const from = oldest?.rowid ?? 0;
    const candidates = unfiltered
      ? this.#messageHits.all(match, from)
      : this.#filteredMessageHits.all(match, from, o.agent, o.agent, o.sender, o.sender);
    // Title and summary matches add to their conversation's score.
    const lifts = this.#conversationHits.all(match, o.agent, o.agent, o.sender, o.sender);
    const { before, after } = windowSides(o.contextBefore, o.contextAfter);
    return rankConversations(candidates, lifts, o.limit).map(({ id, idx, score }) => {
      const c = this.conversation.get(id)!;
      const window = this.#window.all(id, Math.max(0, idx - before), idx + after).map((m) => windowEntry(m, words));
      return { agent: c.agent, sender: c.sender, title: c.title, msg_idx: idx, score, created_at: c.created_at, updated_at: c.updated_at, window };
    });
  }
}
