/**
 * The turn writer's parts in-process, for unit tests: a GroupCommitter on a
 * connection of its own, served over real MessageChannels to one
 * WriterClient per shard storage, exactly as the writer thread serves them.
 */
import { MessageChannel } from 'node:worker_threads';
import { openDatabase, type Db } from '../../src/storage/sqlite/db.ts';
import { WRITER_TOKEN, WriteLock } from '../../src/storage/sqlite/write-lock.ts';
import { GroupCommitter } from '../../src/storage/sqlite/group-commit.ts';
import { ConversationStore, SqliteConversationStorage } from '../../src/storage/sqlite/store.ts';
import { WriterClient } from '../../src/threads/writer/writer-client.ts';

export class InProcessWriter {
  readonly #path: string;
  readonly #lockBuffer: SharedArrayBuffer;
  #db: Db | null = null;
  #committer: GroupCommitter | null = null;

  constructor(path: string, lockBuffer: SharedArrayBuffer) {
    this.#path = path;
    this.#lockBuffer = lockBuffer;
  }

  /** Opened at first use: the schema must be there first. */
  get committer(): GroupCommitter {
    if (this.#committer === null) {
      this.#db = openDatabase(this.#path);
      this.#committer = new GroupCommitter(new ConversationStore(this.#db, new WriteLock(this.#lockBuffer, WRITER_TOKEN)));
    }
    return this.#committer;
  }

  /** A client on a fresh port this writer serves. */
  client(): WriterClient {
    const { port1, port2 } = new MessageChannel();
    this.committer.serve(port1);
    return new WriterClient(port2);
  }

  /** A shard's storage on its own connection, committing through this writer (and, with `commitHere`, itself while the lock is free). */
  shard(lockToken: number, commitHere = false): SqliteConversationStorage {
    return new SqliteConversationStorage(openDatabase(this.#path), new WriteLock(this.#lockBuffer, lockToken), this.client(), commitHere);
  }

  close(): void {
    this.#db?.close();
  }
}
