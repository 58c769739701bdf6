/**
 * Session search over stored conversations (PROTOCOL §4): FTS5 finds the
 * newest SEARCH_CANDIDATES matches, search-bm25.ts ranks them by BM25, one
 * hit per conversation, best first. User text weighs 1.5, assistant text and
 * tool names 1; a match in the title or the compaction summary lifts its
 * conversation. A query is words, never FTS5 syntax.
 */
import type { Db } from '../shared/db.ts';
import type { SearchOptions } from '../shared/threads.ts';
import type { SearchWindowMessage, SessionHit } from '../shared/wire/ops.ts';
import { SearchIndex } from './search-index.ts';
import { ftsQuery, queryWords, rankConversations, SEARCH_CANDIDATES, windowEntry, windowSides, type WindowRow } from './search-rules.ts';
import { Bm25Stats, CONVERSATIONS_FTS, MESSAGES_FTS } from './search-bm25.ts';

export type { SearchOptions };
export type { SessionHit, SearchWindowMessage as WindowMessage };
export { ftsQuery, snippetOf } from './search-rules.ts';

/** Messages indexed per transaction when a search finds the index behind. */
const CATCH_UP_BATCH = 2_000;

interface Candidate {
  user_text: string;
  assistant_text: string;
  tool_names: string;
  conversation_id: number;
  idx: number;
}

interface TitleCandidate {
  id: number;
  title: string;
  summary: string;
}

type Filter = [string | null, string | null, string | null, string | null];

export class SessionSearch {
  readonly #candidates;
  readonly #filteredCandidates;
  readonly #titleCandidates;
  readonly #conversation;
  readonly #window;
  readonly #messageStats: Bm25Stats;
  readonly #titleStats: Bm25Stats;
  readonly #index: SearchIndex;

  /** `index` indexes what was committed since its last batch before each search (search-index.ts). */
  constructor(db: Db, index: SearchIndex = new SearchIndex(db)) {
    this.#index = index;
    this.#messageStats = new Bm25Stats(db, MESSAGES_FTS);
    this.#titleStats = new Bm25Stats(db, CONVERSATIONS_FTS);
    // Only the newest SEARCH_CANDIDATES matches are ranked, read with their indexed text (exactly as indexed)
    // for search-bm25.ts to score: FTS5 walks its doclists newest first and stops there. Ranking every match
    // made a search's cost grow with the number of matches (PROTOCOL §4.3).
    const allowed = 'IN (SELECT id FROM conversations WHERE (? IS NULL OR agent = ?) AND (? IS NULL OR sender = ?))';
    const columns = 'user_text, assistant_text, tool_names, conversation_id, idx';
    this.#candidates = db.prepare<[string, number], Candidate>(
      `SELECT ${columns} FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid DESC LIMIT ?`,
    );
    this.#filteredCandidates = db.prepare<[string, ...Filter, number], Candidate>(
      `SELECT ${columns} FROM messages_fts WHERE messages_fts MATCH ? AND conversation_id ${allowed} ORDER BY rowid DESC LIMIT ?`,
    );
    // Titles and summaries the same way: the newest SEARCH_CANDIDATES matching conversations (rowid = conversations.id).
    // The filter is a join, so FTS5 drives and each match looks its conversation up (never one FTS5 lookup per conversation).
    this.#titleCandidates = db.prepare<[string, ...Filter, number], TitleCandidate>(`
      SELECT f.rowid AS id, f.title, coalesce(f.summary, '') AS summary FROM conversations_fts f JOIN conversations c ON c.id = f.rowid
      WHERE conversations_fts MATCH ? AND (? IS NULL OR c.agent = ?) AND (? IS NULL OR c.sender = ?)
      ORDER BY f.rowid DESC LIMIT ?`);
    this.#conversation = db.prepare<[number], { agent: string; sender: string; title: string; created_at: string; updated_at: string }>(
      'SELECT agent, sender, title, created_at, updated_at FROM conversations WHERE id = ?',
    );
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
    const filter: Filter = [o.agent, o.agent, o.sender, o.sender];
    const unfiltered = o.agent === null && o.sender === null;
    const rows = unfiltered ? this.#candidates.all(match, SEARCH_CANDIDATES) : this.#filteredCandidates.all(match, ...filter, SEARCH_CANDIDATES);
    const score = this.#messageStats.scorer(words);
    const candidates = rows
      .map((r) => ({ conversation_id: r.conversation_id, idx: r.idx, score: score([r.user_text, r.assistant_text, r.tool_names]) }))
      .sort((a, b) => b.score - a.score);
    // Title and summary matches add to their conversation's score.
    const titleScore = this.#titleStats.scorer(words);
    const lifts = this.#titleCandidates.all(match, ...filter, SEARCH_CANDIDATES).map((c) => ({ id: c.id, score: titleScore([c.title, c.summary]) }));
    const { before, after } = windowSides(o.contextBefore, o.contextAfter);
    return rankConversations(candidates, lifts, o.limit).map(({ id, idx, score }) => {
      const c = this.#conversation.get(id)!;
      const window = this.#window.all(id, Math.max(0, idx - before), idx + after).map((m) => windowEntry(m, words));
      return { agent: c.agent, sender: c.sender, title: c.title, msg_idx: idx, score, created_at: c.created_at, updated_at: c.updated_at, window };
    });
  }
}
