/**
 * Session search over a PostgreSQL store, by the rules of PROTOCOL §4 and
 * SQLite's search.ts: words ORed, one hit per conversation best first,
 * title and summary matches lift, the same limits, window and snippets.
 * Ranking is ts_rank (normalized by document length) over the GIN-indexed
 * tsvector of each message, user text weighted 1.5 against assistant text
 * and tool names 1, instead of FTS5's bm25: the order agrees on the usual
 * cases, the scores are on another scale.
 */
import type pg from 'pg';
import type { SearchOptions } from '../../threads/storage/messages.ts';
import type { SessionHit } from '../../shared/wire/ops.ts';
import { tsQueryText } from './search-text.ts';
import { SEARCH_LIMITS } from '../../shared/protocol.ts';
import { SearchBudget } from '../search-budget.ts';
import {
  queryWords, rankConversations, SEARCH_CANDIDATES, sliceChars, snippetOf, snippetOfSlicesAsync, WHOLE_TEXT_BYTES, windowEntry, windowSides,
  type RankedConversation, type SliceRead, type Snippet, type WindowRow,
} from '../search-rules.ts';

/** ts_rank weights {D, C, B, A}: B (assistant text, tool names) 1, A (user text) 1.5. */
const WEIGHTS = '{0, 0, 0.6666667, 1}';
/** ts_rank normalization 1: divide by 1 + log(length), so one mention in a long message counts less, as in bm25. */
const NORMALIZATION = 1;

const FILTER = '($2::text IS NULL OR c.agent = $2) AND ($3::text IS NULL OR c.sender = $3)';

/**
 * Only the newest SEARCH_CANDIDATES matches (by message id, storing order) are ranked, as on SQLite:
 * the GIN index finds the matches, and ts_rank, which reads each row's tsvector, runs on at most
 * SEARCH_CANDIDATES of them however many match.
 */
const MESSAGE_HITS = `
  SELECT r.conversation_id, r.idx, ts_rank('${WEIGHTS}', r.search, q, ${NORMALIZATION}) AS score
  FROM (
    SELECT m.conversation_id, m.idx, m.search
    FROM messages m JOIN conversations c ON c.id = m.conversation_id, websearch_to_tsquery('simple', $1) q
    WHERE m.search @@ q AND ${FILTER}
    ORDER BY m.id DESC LIMIT ${SEARCH_CANDIDATES}
  ) r, websearch_to_tsquery('simple', $1) q
  ORDER BY score DESC, r.conversation_id`;

/** Titles and summaries: the newest SEARCH_CANDIDATES matching conversations, as on SQLite. */
const CONVERSATION_HITS = `
  SELECT r.id, ts_rank(r.doc, q, ${NORMALIZATION}) AS score
  FROM (
    SELECT c.id, c.title_search || c.summary_search AS doc
    FROM conversations c, websearch_to_tsquery('simple', $1) q
    WHERE (c.title_search || c.summary_search) @@ q AND ${FILTER}
    ORDER BY c.id DESC LIMIT ${SEARCH_CANDIDATES}
  ) r, websearch_to_tsquery('simple', $1) q`;

const CONVERSATIONS = 'SELECT id, agent, sender, title, created_at, updated_at FROM conversations WHERE id = ANY($1::bigint[])';

/**
 * Every hit's window in one round trip: the rows of each (conversation, idx
 * range). A text over WHOLE_TEXT_BYTES does not come whole: its snippet is
 * read in slices (SLICE), as SQLite's search reads it.
 */
const WINDOWS = `
  SELECT m.id, m.conversation_id, m.idx, m.role, m.name, m.tool_calls, octet_length(m.content) AS bytes,
    CASE WHEN octet_length(m.content) <= ${WHOLE_TEXT_BYTES} THEN m.content END AS content
  FROM unnest($1::bigint[], $2::int[], $3::int[]) AS w(id, lo, hi)
  JOIN messages m ON m.conversation_id = w.id AND m.idx BETWEEN w.lo AND w.hi
  ORDER BY m.conversation_id, m.idx`;

/** `n` characters of a message's text from character `start` (1-based). */
const SLICE = 'SELECT substr(content, $2, $3) AS s FROM messages WHERE id = $1';

/** A window's message: its text whole, or null when it is over WHOLE_TEXT_BYTES. */
type WindowRead = Omit<WindowRow, 'content'> & { id: number; conversation_id: number; bytes: number; content: string | null };

export class PgSessionSearch {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  /**
   * Throws SearchStopped (search-budget.ts) once past `o`'s deadline or
   * cancelled, checked after each query and before each slice read (each
   * query reads at most SEARCH_CANDIDATES rows, the GIN index choosing them).
   */
  async search(o: SearchOptions): Promise<SessionHit[]> {
    const words = queryWords(o.query);
    const tsQuery = words === null ? null : tsQueryText(words);
    if (words === null || tsQuery === null) return [];
    const budget = SearchBudget.of(o);
    budget.check();
    const ranked = await this.#rank(tsQuery, o);
    budget.check();
    if (ranked.length === 0) return [];
    const { before, after } = windowSides(o.contextBefore, o.contextAfter);
    const [conversations, windows] = await Promise.all([
      this.#pool.query<{ id: number; agent: string; sender: string; title: string; created_at: string; updated_at: string }>(CONVERSATIONS, [ranked.map((r) => r.id)]),
      this.#pool.query<WindowRead>(WINDOWS, [
        ranked.map((r) => r.id),
        ranked.map((r) => Math.max(0, r.idx - before)),
        ranked.map((r) => r.idx + after),
      ]),
    ]);
    budget.check();
    const snippets = await this.#snippets(windows.rows, words, budget);
    const byId = new Map(conversations.rows.map((c) => [c.id, c]));
    return ranked.flatMap(({ id, idx, score }) => {
      const c = byId.get(id);
      if (c === undefined) return []; // deleted between the ranking and this read
      const window = windows.rows.filter((m) => m.conversation_id === id).map((m) => windowEntry(m, () => snippets.get(m)!));
      return [{ agent: c.agent, sender: c.sender, title: c.title, msg_idx: idx, score, created_at: c.created_at, updated_at: c.updated_at, window }];
    });
  }

  /** Each window message's snippet: from its text, or a big one's read in slices, one message at a time. */
  async #snippets(rows: readonly WindowRead[], words: readonly string[], budget: SearchBudget): Promise<Map<WindowRead, Snippet>> {
    const bytes = SEARCH_LIMITS.snippetBytes;
    const out = new Map<WindowRead, Snippet>();
    for (const m of rows) {
      if (m.role === 'tool') continue; // a tool message shows no text
      if (m.content !== null) {
        out.set(m, snippetOf(m.content, words, bytes));
        continue;
      }
      const read = async ({ start, n }: SliceRead): Promise<string> => {
        budget.check();
        return (await this.#pool.query<{ s: string }>(SLICE, [m.id, start + 1, n])).rows[0]?.s ?? '';
      };
      out.set(m, await snippetOfSlicesAsync(read, words, bytes, sliceChars(m.bytes, WHOLE_TEXT_BYTES)));
    }
    return out;
  }

  /** Each conversation's best message among the best candidates, lifted by a title or summary match; best first, ties to the older. */
  async #rank(tsQuery: string, o: SearchOptions): Promise<RankedConversation[]> {
    const params = [tsQuery, o.agent, o.sender];
    const [messages, lifts] = await Promise.all([
      this.#pool.query<{ conversation_id: number; idx: number; score: number }>(MESSAGE_HITS, params),
      this.#pool.query<{ id: number; score: number }>(CONVERSATION_HITS, params),
    ]);
    return rankConversations(messages.rows, lifts.rows, o.limit);
  }
}

