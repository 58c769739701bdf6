/** What the tables of rows named by the client (schedules, webhooks) share: statements prepared once, and a bounded insert. */
import type { Statement } from 'better-sqlite3';
import type { Db } from './db.ts';
import type { InsertResult } from '../schedule-calls.ts';

/** A table's statements, prepared once per connection. */
export function preparedOnce<T>(cache: WeakMap<Db, T>, db: Db, prepare: (db: Db) => T): T {
  let s = cache.get(db);
  if (s === undefined) cache.set(db, (s = prepare(db)));
  return s;
}

interface NamedRows {
  get: Statement<[string], unknown>;
  count: Statement<[], { n: number }>;
  insert: Statement<Record<string, unknown>>;
}

/** Adds a row unless its name is taken ('exists') or the table already holds `max` rows ('full'), in one write transaction. */
export function insertNamed(db: Db, s: NamedRows, record: { name: string }, max: number): InsertResult {
  return db.transaction((): InsertResult => {
    if (s.get.get(record.name) !== undefined) return 'exists';
    if (s.count.get()!.n >= max) return 'full';
    s.insert.run({ ...record });
    return 'ok';
  }).immediate();
}
