/**
 * Session search over stored conversations (PROTOCOL §4): FTS5 finds the
 * newest SEARCH_CANDIDATES matches, search-bm25.ts ranks them by BM25, one
 * hit per conversation, best first. User text weighs 1.5, assistant text and
 * tool names 1; a match in the title or the compaction summary lifts its
 * conversation. A query is words, never FTS5 syntax.
 */
import type { Statement } from 'better-sqlite3';
import type { Db } from './db.ts';
import type { SearchOptions } from '../../threads/storage/messages.ts';
import type { SearchWindowMessage, SessionHit } from '../../shared/wire/ops.ts';
import { SearchIndex } from './search-index.ts';
import { ftsQuery, queryWords, rankConversations, SEARCH_CANDIDATES, windowSides } from '../search-rules.ts';
import { Bm25Stats, CONVERSATIONS_FTS, MESSAGES_FTS, type NewestMatches, type TextPieces } from './search-bm25.ts';
import { MessageTexts, TEXT_READ_LIMITS, type TextReadLimits } from './search-texts.ts';
import { SearchBudget } from '../search-budget.ts';

export type { SearchOptions };
export type { SessionHit, SearchWindowMessage as WindowMessage };
export { ftsQuery, snippetOf } from '../search-rules.ts';

/** A filter allowing at most this many messages (or conversations, for titles) is searched by walking them. */
export const NARROW_FILTER_ROWS = 20_000;
/** Messages indexed per transaction when a search finds the index behind. */
const CATCH_UP_BATCH = 2_000;

/**
 * A message that matches: its content when it is small enough to read
 * whole, else its size in bytes (it is read in slices), and its flags
 * (USER_TEXT: a user message, else an assistant one, the only roles
 * indexed; CALLED_TOOLS). A row of columns, from a statement in raw mode,
 * as few as will do: better-sqlite3 builds each row and each value of it
 * through V8's API, which cost more than reading the row.
 */
type Candidate = [id: number, conversationId: number, idx: number, contentOrBytes: string | number, flags: number];
const USER_TEXT = 1;
const CALLED_TOOLS = 2;

/** A candidate statement, returning its rows as columns (Candidate). */
function candidateStatement(db: Db, sql: string): Statement<(string | number)[], Candidate> {
  return db.prepare<(string | number)[], Candidate>(sql).raw(true);
}

/** A conversation whose title or summary matches: its id, title and summary ('' when none), as a row of columns. */
type TitleCandidate = [id: number, title: string, summary: string];

/** A title candidate statement, returning its rows as columns (TitleCandidate). */
function titleStatement(db: Db, sql: string): Statement<(string | number)[], TitleCandidate> {
  return db.prepare<(string | number)[], TitleCandidate>(sql).raw(true);
}

/** The statements of a search narrowed by agent, sender or both; `?` after the query are the filter's values. */
interface FilteredStatements {
  allowedSize: Statement<string[], { conversations: number; messages: number | null }>;
  candidates: Statement<(string | number)[], Candidate>;
  narrowCandidates: Statement<(string | number)[], Candidate>;
  titleCandidates: Statement<(string | number)[], TitleCandidate>;
  narrowTitleCandidates: Statement<(string | number)[], TitleCandidate>;
}

/**
 * A candidate's columns. The index is contentless (migration 7): each match
 * looks its message up by id, and its text is read here only when it is at
 * most `wholeTextBytes` (search-texts.ts reads a bigger one in slices). The
 * row is read from messages itself and split into the indexed columns by
 * #score, which costs less than having the view messages_searchable compute
 * them for every candidate; the view still says what is indexed.
 */
function candidateFrom(wholeTextBytes: number): string {
  return `s.id, s.conversation_id, s.idx,
    CASE WHEN octet_length(s.content) <= ${Math.floor(wholeTextBytes)} THEN s.content ELSE octet_length(s.content) END,
    (s.role = 'user') * ${USER_TEXT} + (s.tool_calls IS NOT NULL) * ${CALLED_TOOLS}
    FROM messages_fts f JOIN messages s ON s.id = f.rowid`;
}

/** A one-word search's candidate walk as its word's count walk (search-bm25.ts). */
function newest(word: string, n: number, last: number | undefined): Map<string, NewestMatches> {
  return new Map([[word, { n, last: last ?? null }]]);
}

/** The scorer of a table with no matches: never called. */
const noScore = (): number => 0;

export class SessionSearch {
  readonly #db: Db;
  readonly #candidates;
  readonly #titleCandidates;
  /** Keyed by which filters are set, so each statement's WHERE can use the (agent, sender) index. */
  readonly #filtered = new Map<string, FilteredStatements>();
  readonly #conversation;
  readonly #texts: MessageTexts;
  /** The columns and tables every candidate statement reads. */
  readonly #candidateFrom: string;
  readonly #messageStats: Bm25Stats;
  readonly #titleStats: Bm25Stats;
  readonly #index: SearchIndex;
  /**
   * Runs a search in one read transaction: a big text read in slices is one
   * message throughout, even if its conversation is deleted meanwhile and its
   * id given to a new message.
   */
  readonly #inOneSnapshot: (o: SearchOptions, match: string, budget: SearchBudget) => SessionHit[];

  /**
   * `index` indexes what was committed since its last batch before each
   * search (search-index.ts); `limits` say which texts are read in slices.
   */
  constructor(db: Db, index: SearchIndex = new SearchIndex(db), limits: TextReadLimits = TEXT_READ_LIMITS) {
    this.#db = db;
    this.#index = index;
    this.#texts = new MessageTexts(db, limits);
    this.#candidateFrom = candidateFrom(limits.wholeTextBytes);
    this.#inOneSnapshot = db.transaction((o: SearchOptions, match: string, budget: SearchBudget) => this.#searchIndexed(o, match, budget));
    this.#messageStats = new Bm25Stats(db, MESSAGES_FTS);
    this.#titleStats = new Bm25Stats(db, CONVERSATIONS_FTS);
    // Only the newest SEARCH_CANDIDATES matches are ranked: FTS5 walks its doclists newest first and stops
    // there. Ranking every match made a search's cost grow with the number of matches (PROTOCOL §4.3).
    this.#candidates = candidateStatement(db, `SELECT ${this.#candidateFrom} WHERE messages_fts MATCH ? ORDER BY f.rowid DESC LIMIT ?`);
    // Titles and summaries the same way: the newest SEARCH_CANDIDATES matching conversations (rowid = conversations.id).
    this.#titleCandidates = titleStatement(
      db,
      `SELECT rowid AS id, title, coalesce(summary, '') AS summary FROM conversations_fts WHERE conversations_fts MATCH ? ORDER BY rowid DESC LIMIT ?`,
    );
    this.#conversation = db.prepare<[number], { agent: string; sender: string; title: string; created_at: string; updated_at: string }>(
      'SELECT agent, sender, title, created_at, updated_at FROM conversations WHERE id = ?',
    );
  }

  #filteredStatements(agent: string | null, sender: string | null): FilteredStatements {
    const key = `${agent !== null}${sender !== null}`;
    let f = this.#filtered.get(key);
    if (f !== undefined) return f;
    const where = (prefix: string): string =>
      [agent !== null ? `${prefix}agent = ?` : null, sender !== null ? `${prefix}sender = ?` : null].filter((c) => c !== null).join(' AND ');
    const allowed = `IN (SELECT id FROM conversations WHERE ${where('')})`;
    const db = this.#db;
    f = {
      // Counts no further than the bound: past it, the filter is wide either way.
      allowedSize: db.prepare(`
        SELECT count(*) AS conversations, sum(message_count) AS messages
        FROM (SELECT message_count FROM conversations WHERE ${where('')} LIMIT ${NARROW_FILTER_ROWS + 1})`),
      // A wide filter: FTS5 walks the matches newest first and each looks its conversation up, until enough pass.
      candidates: candidateStatement(
        db,
        `SELECT ${this.#candidateFrom} JOIN conversations c ON c.id = s.conversation_id
        WHERE messages_fts MATCH ? AND ${where('c.')} ORDER BY f.rowid DESC LIMIT ?`,
      ),
      // A filter that allows few messages (a turn's own conversation, say) walks those messages instead, each one
      // FTS5 lookup: walking the matches newest first until SEARCH_CANDIDATES pass the filter would read every match.
      narrowCandidates: candidateStatement(
        db,
        `SELECT ${this.#candidateFrom}
        WHERE messages_fts MATCH ? AND f.rowid IN (SELECT id FROM messages WHERE conversation_id ${allowed})
        ORDER BY f.rowid DESC LIMIT ?`,
      ),
      // A join: FTS5 drives and each match looks its conversation up.
      titleCandidates: titleStatement(db, `
        SELECT f.rowid AS id, f.title, coalesce(f.summary, '') AS summary FROM conversations_fts f JOIN conversations c ON c.id = f.rowid
        WHERE conversations_fts MATCH ? AND ${where('c.')} ORDER BY f.rowid DESC LIMIT ?`),
      narrowTitleCandidates: titleStatement(db, `
        SELECT rowid AS id, title, coalesce(summary, '') AS summary FROM conversations_fts
        WHERE conversations_fts MATCH ? AND rowid ${allowed} ORDER BY rowid DESC LIMIT ?`),
    };
    this.#filtered.set(key, f);
    return f;
  }

  /**
   * A candidate's BM25 score: a small text as read with the candidates (all
   * of them at most SEARCH_CANDIDATES x wholeTextBytes), a big one read
   * again by id, in slices (a message deleted since it matched scores 0).
   */
  #score(score: (columns: readonly TextPieces[]) => number, c: Candidate, budget: SearchBudget): number {
    const [id, , , content, flags] = c;
    if (typeof content === 'string') {
      // As messages_searchable splits a message: user text, assistant text, the names of the tools it called.
      if (flags & USER_TEXT) return score([content, '', '']);
      return score(['', content, flags & CALLED_TOOLS ? this.#texts.toolNames(id) : '']);
    }
    const columns = this.#texts.inSlices(id, content, budget);
    return columns === undefined ? 0 : score(columns);
  }

  /** Throws SearchStopped (search-budget.ts) once past `o`'s deadline or cancelled, checked between steps. */
  search(o: SearchOptions): SessionHit[] {
    const match = ftsQuery(o.query);
    if (match === null) return [];
    const budget = SearchBudget.of(o);
    // Every turn that ended before this search is committed: index it first, so the search sees it.
    do budget.check();
    while (this.#index.catchUp(CATCH_UP_BATCH) > 0);
    return this.#inOneSnapshot(o, match, budget);
  }

  /** The search itself, every read in one snapshot (see #inOneSnapshot). */
  #searchIndexed(o: SearchOptions, match: string, budget: SearchBudget): SessionHit[] {
    const words = queryWords(o.query)!;
    let rows: Candidate[];
    let titles: TitleCandidate[];
    let walked: { messages: Map<string, NewestMatches>; titles: Map<string, NewestMatches> } | undefined;
    if (o.agent === null && o.sender === null) {
      rows = this.#candidates.all(match, SEARCH_CANDIDATES);
      titles = this.#titleCandidates.all(match, SEARCH_CANDIDATES);
      // One word, no filter: the walks for candidates were its newest matches, as many as its count walks (IDF_COUNT_CAP).
      if (words.length === 1) walked = { messages: newest(words[0]!, rows.length, rows.at(-1)?.[0]), titles: newest(words[0]!, titles.length, titles.at(-1)?.[0]) };
    } else {
      const f = this.#filteredStatements(o.agent, o.sender);
      const values = [o.agent, o.sender].filter((v) => v !== null);
      // Whichever of the filter's rows or the matches is smaller bounds the walk.
      const size = f.allowedSize.get(...values)!;
      rows = ((size.messages ?? 0) <= NARROW_FILTER_ROWS ? f.narrowCandidates : f.candidates).all(match, ...values, SEARCH_CANDIDATES);
      titles = (size.conversations <= NARROW_FILTER_ROWS ? f.narrowTitleCandidates : f.titleCandidates).all(match, ...values, SEARCH_CANDIDATES);
    }
    // The index chose the candidates; only their texts are read, each checked against the budget first.
    // Word weights are read only for a table with matches (a search of rare words often has none).
    const score = rows.length > 0 ? this.#messageStats.scorer(words, walked?.messages) : noScore;
    const titleScore = titles.length > 0 ? this.#titleStats.scorer(words, walked?.titles) : noScore;
    const candidates = rows
      .map((r) => {
        budget.check();
        return { conversation_id: r[1], idx: r[2], score: this.#score(score, r, budget) };
      })
      .sort((a, b) => b.score - a.score);
    // Title and summary matches add to their conversation's score.
    const lifts = titles.map(([id, title, summary]) => ({ id, score: titleScore([title, summary]) }));
    const { before, after } = windowSides(o.contextBefore, o.contextAfter);
    return rankConversations(candidates, lifts, o.limit).flatMap(({ id, idx, score }) => {
      budget.check();
      const c = this.#conversation.get(id);
      if (c === undefined) return []; // an index row whose conversation is gone finds nothing
      const window = this.#texts.window(id, Math.max(0, idx - before), idx + after, words, budget);
      return [{ agent: c.agent, sender: c.sender, title: c.title, msg_idx: idx, score, created_at: c.created_at, updated_at: c.updated_at, window }];
    });
  }
}
