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
import { ftsQuery, queryWords, SEARCH_CANDIDATES, windowEntry, windowSides, type WindowRow } from './search-rules.ts';

export type { SearchOptions };
export type { SessionHit, SearchWindowMessage as WindowMessage };
export { ftsQuery, snippetOf } from './search-rules.ts';

/** Weights of messages_fts columns for bm25: user_text, assistant_text, tool_names (then two unindexed). */
const MESSAGE_WEIGHTS = '1.5, 1.0, 1.0, 0, 0';
/** Messages indexed per transaction when a search finds the index behind. */
const CATCH_UP_BATCH = 2_000;

/**
 * One statement ranks a search: the newest SEARCH_CANDIDATES matches from `from` on (FTS5 seeks to
 * that rowid, so bm25 scores at most SEARCH_CANDIDATES rows however many match), each conversation's
 * best of them, plus its title-or-summary score, best first, ties to the older conversation, at most
 * `limit`: rankConversations' rule (search-rules.ts), done where the rows are, so only the hits come
 * back to JavaScript. bm25 needs its FTS5 cursor: the CTEs that call it are MATERIALIZED, never
 * flattened into the joins.
 */
function rankingSql(filtered: boolean): string {
  const allowed = 'conversation_id IN (SELECT id FROM conversations WHERE (@agent IS NULL OR agent = @agent) AND (@sender IS NULL OR sender = @sender))';
  return `
    WITH best AS MATERIALIZED (
      SELECT rowid, -bm25(messages_fts, ${MESSAGE_WEIGHTS}) AS score
      FROM messages_fts WHERE messages_fts MATCH @match AND rowid >= @from ${filtered ? `AND ${allowed}` : ''}
    ),
    message_hits AS (
      SELECT m.conversation_id AS id, m.idx, max(best.score) AS score
      FROM best JOIN messages m ON m.id = best.rowid GROUP BY m.conversation_id
    ),
    lifts AS MATERIALIZED (
      SELECT c.id, -bm25(conversations_fts) AS score
      FROM conversations_fts JOIN conversations c ON c.id = conversations_fts.rowid
      WHERE conversations_fts MATCH @match AND (@agent IS NULL OR c.agent = @agent) AND (@sender IS NULL OR c.sender = @sender)
    ),
    ranked AS (
      SELECT id, max(idx) AS idx, sum(score) AS score
      FROM (SELECT id, idx, score FROM message_hits UNION ALL SELECT id, 0 AS idx, score FROM lifts)
      GROUP BY id ORDER BY score DESC, id LIMIT @limit
    )
    SELECT r.idx, r.score, c.id, c.agent, c.sender, c.title, c.created_at, c.updated_at
    FROM ranked r JOIN conversations c ON c.id = r.id
    ORDER BY r.score DESC, r.id`;
}

interface RankParams {
  match: string;
  from: number;
  agent: string | null;
  sender: string | null;
  limit: number;
}

interface RankedRow {
  idx: number;
  score: number;
  id: number;
  agent: string;
  sender: string;
  title: string;
  created_at: string;
  updated_at: string;
}

export class SessionSearch {
  readonly #bound;
  readonly #filteredBound;
  readonly #rank;
  readonly #filteredRank;
  readonly #window;
  readonly #index: SearchIndex;

  /** `index` indexes what was committed since its last batch before each search (search-index.ts). */
  constructor(db: Db, index: SearchIndex = new SearchIndex(db)) {
    this.#index = index;
    // Only the newest SEARCH_CANDIDATES matches are ranked: this finds the oldest of them (FTS5 walks its
    // doclists newest first and stops there). Ranking every match made a search's cost grow with the
    // number of matches (PROTOCOL §4.3).
    this.#bound = db.prepare<[string, number], { rowid: number }>(
      'SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?',
    );
    this.#filteredBound = db.prepare<[string, string | null, string | null, string | null, string | null, number], { rowid: number }>(`
      SELECT rowid FROM messages_fts
      WHERE messages_fts MATCH ?
        AND conversation_id IN (SELECT id FROM conversations WHERE (? IS NULL OR agent = ?) AND (? IS NULL OR sender = ?))
      ORDER BY rowid DESC LIMIT 1 OFFSET ?`);
    this.#rank = db.prepare<[RankParams], RankedRow>(rankingSql(false));
    this.#filteredRank = db.prepare<[RankParams], RankedRow>(rankingSql(true));
    this.#window = db.prepare<[number, number, number], WindowRow>(
      'SELECT idx, role, content, name, tool_calls FROM messages WHERE conversation_id = ? AND idx BETWEEN ? AND ? ORDER BY idx',
    );
  }

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
    const params: RankParams = { match, from: oldest?.rowid ?? 0, agent: o.agent, sender: o.sender, limit: o.limit };
    const ranked = (unfiltered ? this.#rank : this.#filteredRank).all(params);
    const { before, after } = windowSides(o.contextBefore, o.contextAfter);
    return ranked.map((c) => {
      const window = this.#window.all(c.id, Math.max(0, c.idx - before), c.idx + after).map((m) => windowEntry(m, words));
      return { agent: c.agent, sender: c.sender, title: c.title, msg_idx: c.idx, score: c.score, created_at: c.created_at, updated_at: c.updated_at, window };
    });
  }
}
