/**
 * The SQLite side of DaemonStorage: one storage-pool thread's connection to
 * $AGENTD_HOME/agentd.db (or the `store` file). WAL lets it read while
 * shards write; its few writes take the shards' write lock.
 */
import { boundedCheckpoint, now, openDatabase, prepareDatabaseFile, type Db } from './db.ts';
import { startupStatements, storageStatements } from './daemon-sql.ts';
import type { AgentConfig } from '../../shared/config.ts';
import type { SearchOptions } from '../../threads/storage/messages.ts';
import type { ConversationSummary, SessionHit } from '../../shared/wire/ops.ts';
import type { WriteLock } from './write-lock.ts';
import { SessionSearch } from './search.ts';
import { SearchIndex } from './search-index.ts';
import { settled, type DaemonStorage, type StoredStartupState } from '../contract.ts';
import type { ScheduleCall } from '../schedule-calls.ts';
import { runScheduleCall } from './schedules.ts';
import type { WebhookCall } from '../webhook-calls.ts';
import { runWebhookCall } from './webhooks.ts';
import type { TokenCall } from '../token-calls.ts';
import { runTokenCall } from './tokens.ts';
import { exportPage, type ExportCursor, type ExportFilter } from '../export-page.ts';
import type { ExportPage } from '../../shared/wire/transfer.ts';
import { RENAME_AGENT_ROW, RENAME_STATEMENTS, renamedFilter } from '../rename-agent.ts';

/** The connection and what is prepared on it, made on first use. */
class Connection {
  readonly db: Db;
  readonly sql;
  readonly index: SearchIndex;
  readonly search: SessionSearch;
  readonly deleteSubscriptions;
  readonly deleteAgent;

  constructor(path: string, lock: WriteLock, cacheKib: number | undefined) {
    const db = openDatabase(path, { cacheKib });
    const sql = storageStatements(db);
    this.db = db;
    this.sql = sql;
    this.index = new SearchIndex(db, (fn) => lock.with(fn));
    this.search = new SessionSearch(db, this.index);
    this.deleteSubscriptions = db.transaction((ids: readonly number[]) => {
      let n = 0;
      for (const id of ids) n += sql.deleteSubscription.run(id).changes;
      return n;
    });
    this.deleteAgent = db.transaction((name: string) => {
      sql.deleteAgentFts.run(name);
      sql.deleteAgentTitleFts.run(name);
      sql.deleteAgentConversations.run(name); // messages go by ON DELETE CASCADE
      sql.deleteAgentSubscriptions.run(name);
      sql.deleteAgent.run(name);
    });
  }
}

/** Seeds the agents on the very first start, then reads what main needs to start. */
function readStartupState(db: Db, seedAgents: Record<string, AgentConfig>): StoredStartupState {
  const sql = startupStatements(db);
  const seededNow = sql.agentsSeeded.get() === undefined;
  if (seededNow) {
    const at = now();
    db.transaction(() => {
      for (const [name, agent] of Object.entries(seedAgents)) sql.seedAgent.run(name, JSON.stringify(agent), at, at);
      sql.markAgentsSeeded.run(at);
    })();
  }
  const subscriptions = sql.subscriptions.all().map((r) => ({ ...r, once: r.once === 1 }));
  return { agents: sql.agents.all(), seededNow, subscriptions };
}

export class SqliteDaemonStorage implements DaemonStorage {
  readonly #path: string;
  readonly #lock: WriteLock;
  readonly #cacheKib: number | undefined;
  #connection: Connection | null = null;

  /** `cacheKib`: the connection's page cache (openDatabase's default when absent). */
  constructor(path: string, lock: WriteLock, cacheKib?: number) {
    this.#path = path;
    this.#lock = lock;
    this.#cacheKib = cacheKib;
  }

  /** Opened on first use, never before `prepare`: opening switches the file to WAL, a write a newer schema must not see. */
  get #c(): Connection {
    return (this.#connection ??= new Connection(this.#path, this.#lock, this.#cacheKib));
  }

  prepare(seedAgents: Record<string, AgentConfig>): Promise<StoredStartupState> {
    return settled(() => {
      let state: StoredStartupState | null = null;
      prepareDatabaseFile(this.#path, (db) => (state = readStartupState(db, seedAgents)));
      return state!;
    });
  }

  listConversations(agent: string | null, sender: string | null): Promise<ConversationSummary[]> {
    return settled(() => this.#c.sql.listConversations.all(agent, agent, sender, sender));
  }

  exportPage(filter: ExportFilter, cursor: ExportCursor, limit: number): Promise<ExportPage> {
    const { sql } = this.#c;
    return exportPage({
      conversationFrom: (f, fromId) => settled(() => sql.exportConversation.get(f.agent, f.agent, f.sender, f.sender, fromId) ?? null),
      messagesFrom: (id, fromIdx, n) => settled(() => sql.exportMessages.all(id, fromIdx, n)),
    }, filter, cursor, limit);
  }

  /** The agent and everything that names it, in one transaction (storage/rename-agent.ts); false when there is no such agent. */
  renameAgent(from: string, to: string): Promise<boolean> {
    const { db } = this.#c;
    const rename = db.transaction((): boolean => {
      if (db.prepare(RENAME_AGENT_ROW).run({ from, to, at: now() }).changes === 0) return false;
      for (const sql of RENAME_STATEMENTS) db.prepare(sql).run({ from, to });
      for (const h of db.prepare<[], { name: string; agents: string | null }>('SELECT name, agents FROM webhooks WHERE agents IS NOT NULL').all()) {
        const agents = renamedFilter(h.agents, from, to);
        if (agents !== null) db.prepare('UPDATE webhooks SET agents = ? WHERE name = ?').run(agents, h.name);
      }
      return true;
    });
    return settled(() => this.#lock.with(() => rename()));
  }

  search(options: SearchOptions): Promise<SessionHit[]> {
    return settled(() => this.#c.search.search(options));
  }

  insertSubscription(source: string, targetAgent: string, once: boolean): Promise<number> {
    return settled(() => this.#lock.with(() => this.#c.sql.insertSubscription.get(source, targetAgent, once ? 1 : 0, now())!.id));
  }

  deleteSubscriptions(ids: readonly number[]): Promise<number> {
    return settled(() => this.#lock.with(() => this.#c.deleteSubscriptions.immediate(ids)));
  }

  upsertAgent(name: string, config: string): Promise<void> {
    const at = now();
    return settled(() => void this.#lock.with(() => this.#c.sql.upsertAgent.run(name, config, at, at)));
  }

  deleteAgent(name: string): Promise<void> {
    return settled(() => this.#lock.with(() => this.#c.deleteAgent.immediate(name)));
  }

  /** The bounded WAL checkpoint (see boundedCheckpoint). */
  maintain(walMaxBytes: number): Promise<unknown> {
    return settled(() => boundedCheckpoint(this.#c.db, `${this.#path}-wal`, walMaxBytes, (fn) => this.#lock.with(fn)));
  }

  /** Indexes committed messages for search, a batch at a time (storage/sqlite/search-index.ts). */
  indexMessages(limit: number): Promise<number> {
    return settled(() => this.#c.index.catchUp(limit));
  }

  schedules(call: ScheduleCall): Promise<unknown> {
    return settled(() => this.#lock.with(() => runScheduleCall(this.#c.db, call)));
  }

  webhooks(call: WebhookCall): Promise<unknown> {
    return settled(() => this.#lock.with(() => runWebhookCall(this.#c.db, call)));
  }

  tokens(call: TokenCall): Promise<unknown> {
    return settled(() => this.#lock.with(() => runTokenCall(this.#c.db, call)));
  }

  /** At shutdown, when no shard is left: TRUNCATE folds the WAL into the database and empties it. */
  close(): Promise<void> {
    return settled(() => {
      const c = this.#c;
      this.#connection = null;
      try {
        c.db.pragma('wal_checkpoint(TRUNCATE)');
      } finally {
        c.db.close();
      }
    });
  }
}
