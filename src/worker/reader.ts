/**
 * The reader pool's task handler (piscina): read-only queries of stored
 * conversations, off the main thread. Each reader thread keeps one read-only
 * connection; WAL lets it read while shards write.
 */
import type { Db } from '../shared/db.ts';
import { openDatabase } from '../shared/db.ts';
import type { ReaderTask } from '../shared/threads.ts';
import { SessionSearch } from './search.ts';

let db: Db | null = null;
let search: SessionSearch | null = null;
interface ListRow {
  agent: string;
  sender: string;
  title: string;
  message_count: number;
  created_at: string;
  updated_at: string;
}
type Nullable = string | null;
let listStatement: ReturnType<typeof prepareList> | null = null;

function prepareList(d: Db) {
  return d.prepare<[Nullable, Nullable, Nullable, Nullable], ListRow>(`
    SELECT agent, sender, title, message_count, created_at, updated_at FROM conversations
    WHERE (? IS NULL OR agent = ?) AND (? IS NULL OR sender = ?)
    ORDER BY updated_at DESC, id DESC`);
}

function open(path: string): void {
  if (db !== null) return;
  db = openDatabase(path, { readonly: true });
  search = new SessionSearch(db);
  listStatement = prepareList(db);
}

export default function handle(task: ReaderTask): unknown {
  open(task.dbPath);
  switch (task.op) {
    case 'list_conversations':
      return { conversation_list: { conversations: listStatement!.all(task.agent, task.agent, task.sender, task.sender) } };
    case 'search_sessions':
      return { session_hits: { hits: search!.search(task) } };
  }
}
