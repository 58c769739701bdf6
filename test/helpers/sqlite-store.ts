/** A fresh SQLite database for a test, at the current schema, with the shards' store engine on it. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrate, openDatabase, type Db } from '../../src/storage/sqlite/db.ts';
import { createWriteLockBuffer, ownerToken, WriteLock } from '../../src/storage/sqlite/write-lock.ts';
import { ConversationStore } from '../../src/storage/sqlite/store.ts';

export interface FreshStore {
  /** The temporary folder holding the database (a script that outlives no test removes it). */
  dir: string;
  path: string;
  db: Db;
  /** On `db`, holding the write lock as shard 0 does. */
  store: ConversationStore;
}

/** `agentd.db` in a new temporary folder named after `prefix`, migrated, and a ConversationStore on it. */
export function freshStore(prefix: string): FreshStore {
  const dir = mkdtempSync(join(tmpdir(), `agentd-${prefix}-`));
  const path = join(dir, 'agentd.db');
  const db = openDatabase(path);
  migrate(db, path);
  return { dir, path, db, store: new ConversationStore(db, new WriteLock(createWriteLockBuffer(), ownerToken(0))) };
}
