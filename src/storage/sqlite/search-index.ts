/**
 * The message search index, kept off a turn's commit. Shards store messages
 * only; this indexes them afterwards, in batches, behind a watermark (the
 * highest message id indexed, table fts_watermark). Message ids grow in
 * commit order (one writer at a time), so everything above the watermark is
 * exactly what is not indexed yet. A storage thread calls catchUp() on a
 * timer, and every search calls it first, so a search always sees every
 * turn that ended before it was asked. A deleted message takes nothing with
 * it here: it was either indexed (its delete removes the index row) or is
 * gone before the indexer reads it; a trigger lowers the watermark when the
 * newest messages go, so their reused ids are indexed again (migration 5).
 */
import type { Db } from './db.ts';

/** Runs a write transaction holding the shards' write lock (or directly, with none to share). */
export type WithWriteLock = <T>(fn: () => T) => T;

/**
 * Bytes of message text one indexing transaction reads at most (a bigger
 * message goes alone): a batch's strings, their bound copies and FTS5's
 * position lists live at once, and two 16 MiB messages read together raised
 * the daemon's peak by about 6x their size after the turn had ended.
 */
export const BATCH_TEXT_BYTES = 1024 * 1024;

/**
 * Indexes the messages above the watermark up to id `?`: what full-text
 * search may see of each (the view messages_searchable says what that is,
 * migration 7). The index is contentless: it keeps tokens, not the text.
 */
const INDEX_MESSAGES = `
  INSERT INTO messages_fts (rowid, user_text, assistant_text, tool_names)
  SELECT id, user_text, assistant_text, tool_names FROM messages_searchable
  WHERE id > (SELECT message_id FROM fts_watermark) AND id <= ?
  ORDER BY id`;

export class SearchIndex {
  readonly #lock: WithWriteLock;
  readonly #behind;
  readonly #sizes;
  readonly #insert;
  readonly #advance;
  readonly #batchTx;

  constructor(db: Db, lock: WithWriteLock = (fn) => fn()) {
    this.#lock = lock;
    this.#behind = db.prepare<[], { behind: number }>(
      'SELECT EXISTS (SELECT 1 FROM messages WHERE id > (SELECT message_id FROM fts_watermark)) AS behind',
    );
    // octet_length reads a text's size from its record header, without loading the text.
    this.#sizes = db.prepare<[number], { id: number; bytes: number }>(
      'SELECT id, octet_length(content) AS bytes FROM messages WHERE id > (SELECT message_id FROM fts_watermark) ORDER BY id LIMIT ?',
    );
    // In SQL, not through JS: a message's text never becomes a string here, nor a bound copy of one.
    this.#insert = db.prepare<[number]>(INDEX_MESSAGES);
    this.#advance = db.prepare<[number]>('UPDATE fts_watermark SET message_id = ?');
    this.#batchTx = db.transaction((limit: number) => {
      const sizes = this.#sizes.all(limit);
      // Another storage thread may have indexed them since catchUp looked.
      if (sizes.length === 0) return 0;
      const last = lastWithin(sizes, BATCH_TEXT_BYTES);
      this.#insert.run(sizes[last]!.id);
      this.#advance.run(sizes[last]!.id);
      return last + 1;
    });
  }

  /**
   * Indexes up to `limit` messages above the watermark, and at most
   * BATCH_TEXT_BYTES of their text, in one transaction; returns how many it
   * read (0: the index is caught up; fewer than `limit`: caught up, or the
   * batch was cut at its bytes). Takes the write lock only when there is
   * something to index.
   */
  catchUp(limit: number): number {
    if (this.#behind.get()!.behind === 0) return 0;
    return this.#lock(() => this.#batchTx.immediate(limit));
  }

  /** Indexes everything committed so far, in batches of `batch`. */
  catchUpAll(batch: number): void {
    while (this.catchUp(batch) > 0);
  }
}

/** The position in `sizes` (in id order) of the last message whose running total of bytes stays within `budget`; at least the first. */
function lastWithin(sizes: readonly { id: number; bytes: number }[], budget: number): number {
  let total = sizes[0]!.bytes;
  let last = 0;
  while (last + 1 < sizes.length && total + sizes[last + 1]!.bytes <= budget) total += sizes[++last]!.bytes;
  return last;
}
