/**
 * The turn writer thread (SQLite): owns the one connection that commits
 * every shard's turns (group-commit.ts). Main hands it one port per shard
 * (`port` messages, again for each replacement shard) and watches its
 * heartbeat like a shard's; if it crashes or freezes, the shards' waiting
 * batches are answered with an error and main starts a replacement.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openDatabase } from '../../storage/sqlite/db.ts';
import { createLogger } from '../../shared/log.ts';
import { WRITER_TOKEN, WriteLock } from '../../storage/sqlite/write-lock.ts';
import type { FromWriter, ToWriter, WriterInit } from './messages.ts';
import { GroupCommitter } from '../../storage/sqlite/group-commit.ts';
import { startHeartbeat } from '../../shared/liveness.ts';
import { ConversationStore } from '../../storage/sqlite/store.ts';
import type { TurnRecord } from '../../storage/contract.ts';

const init = workerData as WriterInit;
const port = parentPort!;
const log = createLogger(init.logLevel, { thread: 'writer' });
const db = openDatabase(init.path);
const committer = new GroupCommitter(new ConversationStore(db, new WriteLock(init.writeLock, WRITER_TOKEN)));

/** Test-only fault injection: a turn whose user message holds a token crashes or freezes this thread. */
function inspect(turns: readonly TurnRecord[]): void {
  for (const t of turns) {
    for (const m of t.messages) {
      if (m.role !== 'user') continue;
      if (m.content === init.crashToken) throw new Error('turn writer: crash injected by AGENTD_TEST_WRITER_CRASH_TOKEN');
      if (m.content === init.stallToken) for (;;); // frozen, like a writer stuck in synchronous work
    }
  }
}
const faults = init.crashToken !== null || init.stallToken !== null;

startHeartbeat(init.heartbeat, init.heartbeatMs);
port.on('message', (msg: ToWriter) => {
  if (msg.type === 'port') return committer.serve(msg.port, faults ? inspect : undefined);
  // Shutdown comes after the shards are gone: nothing more will be sent.
  committer.flush();
  db.close();
  log.debug('turn writer closed');
  port.postMessage({ type: 'closed' } satisfies FromWriter);
});
port.postMessage({ type: 'ready' } satisfies FromWriter);
