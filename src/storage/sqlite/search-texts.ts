/**
 * A message's text as search reads it, without holding a big one whole
 * (memory stays proportional to the request). A text of at most
 * `wholeTextBytes` is read whole; a bigger one in slices of `sliceChars`
 * characters or an eighth of the text, whichever is more, so that scoring
 * and snippets hold one slice as a string at a time. SQLite has no partial
 * read of a text: it loads the whole value for each slice and frees it at
 * once. Reading a 16 MiB message whole cost a string, its folded copy and
 * SQLite's copy of the row, every candidate's at once.
 */
import type { Statement } from 'better-sqlite3';
import type { Db } from './db.ts';
import { SEARCH_LIMITS } from '../../shared/protocol.ts';
import type { SearchWindowMessage } from '../../shared/wire/ops.ts';
import type { TextPieces } from './search-bm25.ts';
import { UNBOUNDED, type SearchBudget } from '../search-budget.ts';
import { sliceChars, snippetOf, snippetOfSlices, WHOLE_TEXT_BYTES, windowEntry, type WindowRow } from '../search-rules.ts';

export interface TextReadLimits {
  /** A text of at most this many bytes of UTF-8 is read whole. */
  wholeTextBytes: number;
  /** The fewest characters a slice of a bigger text holds. */
  sliceChars: number;
}

/**
 * Search reads up to SEARCH_CANDIDATES texts with the candidates, so at most
 * 200 x 64 KiB at once; a bigger text is read alone, in slices.
 */
export const TEXT_READ_LIMITS: TextReadLimits = { wholeTextBytes: WHOLE_TEXT_BYTES, sliceChars: 64 * 1024 };
type IndexedColumn = 'user_text' | 'assistant_text';
/** A window's message; `content` is null when it is too big to read whole. */
type WindowRowRead = Omit<WindowRow, 'content'> & { id: number; content: string | null; bytes: number };
/** The same, as the columns of a raw row. */
type WindowColumns = [id: number, idx: number, role: WindowRow['role'], content: string | null, bytes: number, name: string | null, toolCalls: string | null];

export class MessageTexts {
  readonly #limits: TextReadLimits;
  readonly #toolNames;
  readonly #slice: Record<IndexedColumn, Statement<[number, number, number], { s: string }>>;
  readonly #contentSlice;
  readonly #window;

  constructor(db: Db, limits: TextReadLimits = TEXT_READ_LIMITS) {
    this.#limits = limits;
    // What is indexed, exactly as indexed (migration 7's view).
    this.#toolNames = db.prepare<[number], { tool_names: string }>('SELECT tool_names FROM messages_searchable WHERE id = ?');
    // substr counts characters (code points) from 1.
    this.#slice = {
      user_text: db.prepare('SELECT substr(user_text, ?, ?) AS s FROM messages_searchable WHERE id = ?'),
      assistant_text: db.prepare('SELECT substr(assistant_text, ?, ?) AS s FROM messages_searchable WHERE id = ?'),
    };
    this.#contentSlice = db.prepare<[number, number, number], { s: string }>('SELECT substr(content, ?, ?) AS s FROM messages WHERE id = ?');
    // octet_length reads a text's size from its record header, without loading the text.
    // Rows of columns (raw): better-sqlite3 makes an object per row at several times the cost of an array.
    this.#window = db
      .prepare<[number, number, number, number], WindowColumns>(`
      SELECT id, idx, role, CASE WHEN octet_length(content) <= ? THEN content END AS content, octet_length(content) AS bytes, name, tool_calls
      FROM messages WHERE conversation_id = ? AND idx BETWEEN ? AND ? ORDER BY idx`)
      .raw(true);
  }

  /** The names of the tools an assistant message called, as indexed ('' when it is gone). */
  toolNames(id: number): string {
    return this.#toolNames.get(id)?.tool_names ?? '';
  }

  /**
   * A big message's indexed columns (user text, assistant text, tool names),
   * the texts in slices read as they are consumed, as search-bm25.ts scores
   * them; undefined when it is gone. `bytes` is the size of its content.
   * `budget` is checked before each slice (a slice reads the whole text).
   */
  inSlices(id: number, bytes: number, budget: SearchBudget = UNBOUNDED): TextPieces[] | undefined {
    const tools = this.#toolNames.get(id);
    if (tools === undefined) return undefined;
    const chars = this.#sliceChars(bytes);
    return [this.#slices('user_text', id, chars, budget), this.#slices('assistant_text', id, chars, budget), tools.tool_names];
  }

  /** The window's messages of one conversation, idx `from` to `to`, each with a snippet around the first of `words`. */
  window(conversationId: number, from: number, to: number, words: readonly string[], budget: SearchBudget = UNBOUNDED): SearchWindowMessage[] {
    const bytes = SEARCH_LIMITS.snippetBytes;
    return this.#window.all(Math.max(this.#limits.wholeTextBytes, bytes), conversationId, from, to).map(([id, idx, role, content, size, name, toolCalls]) => {
      const m: WindowRowRead = { id, idx, role, content, bytes: size, name, tool_calls: toolCalls };
      return windowEntry(m, () =>
        m.content !== null
          ? snippetOf(m.content, words, bytes)
          : snippetOfSlices(
              ({ start, n }) => {
                budget.check();
                return this.#contentSlice.get(start + 1, n, m.id)?.s ?? '';
              },
              words,
              bytes,
              this.#sliceChars(m.bytes),
            ),
      );
    });
  }

  #sliceChars(bytes: number): number {
    return sliceChars(bytes, this.#limits.sliceChars);
  }

  /** One column of a big message, a slice at a time, read as it is consumed. */
  *#slices(column: IndexedColumn, id: number, chars: number, budget: SearchBudget): Generator<string> {
    for (let start = 1; ; start += chars) {
      budget.check();
      const s = this.#slice[column].get(start, chars, id)?.s ?? '';
      if (s !== '') yield s;
      // Fewer UTF-16 units than `chars` means fewer characters: the text ends here.
      if (s.length < chars) return;
    }
  }
}
