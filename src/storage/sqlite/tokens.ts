/** Scoped tokens as SQLite keeps them (storage/token-calls.ts says what each call means). */
import type { Db } from './db.ts';
import { preparedOnce } from './named-rows.ts';
import type { TokenCall, TokenRecord } from '../token-calls.ts';

const COLUMNS = 'id, hash, scopes, agents, sender, label, created_at';

function statements(db: Db) {
  return {
    count: db.prepare<[], { n: number }>('SELECT count(*) AS n FROM tokens'),
    insert: db.prepare<Record<string, unknown>>(`INSERT INTO tokens (${COLUMNS}) VALUES (@id, @hash, @scopes, @agents, @sender, @label, @created_at)`),
    get: db.prepare<[string], TokenRecord>(`SELECT ${COLUMNS} FROM tokens WHERE id = ?`),
    list: db.prepare<[], TokenRecord>(`SELECT ${COLUMNS} FROM tokens ORDER BY created_at, id`),
    delete: db.prepare<[string]>('DELETE FROM tokens WHERE id = ?'),
  };
}

const prepared = new WeakMap<Db, ReturnType<typeof statements>>();

/** Runs one token call; the caller holds the write lock. */
export function runTokenCall(db: Db, c: TokenCall): unknown {
  const s = preparedOnce(prepared, db, statements);
  switch (c.call) {
    case 'insert':
      return db.transaction(() => {
        if (s.count.get()!.n >= c.max) return 'full';
        s.insert.run({ ...c.record });
        return 'ok';
      }).immediate();
    case 'get':
      return s.get.get(c.id) ?? null;
    case 'list':
      return s.list.all();
    case 'delete':
      return s.delete.run(c.id).changes === 1;
  }
}
