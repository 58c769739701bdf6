/**
 * The daemon-wide work a storage thread does on a PostgreSQL store (the
 * storage contract's DaemonStorage): the schema at start-up, agents seeded
 * once, subscriptions, agent rows, conversation lists and search.
 */
import type pg from 'pg';
import type { Logger } from '../../shared/log.ts';
import { now } from '../sqlite/db.ts';
import type { AgentConfig } from '../../shared/config.ts';
import type { SearchOptions } from '../../threads/storage/messages.ts';
import type { ConversationSummary, SessionHit } from '../../shared/wire/ops.ts';
import { bucketEpoch, claimFence } from './fences.ts';
import { inTransaction, type PoolClient } from './pool.ts';
import { migrate } from './schema.ts';
import { PgSessionSearch } from './search.ts';
import type { DaemonStorage, StoredStartupState, SubscriptionRecord } from '../contract.ts';
import type { ScheduleCall } from '../schedule-calls.ts';
import { runPgScheduleCall } from './schedules.ts';
import type { WebhookCall } from '../webhook-calls.ts';
import { runPgWebhookCall } from './webhooks.ts';
import type { TokenCall } from '../token-calls.ts';
import { runPgTokenCall } from './tokens.ts';
import { exportPage, type ExportConversationRow, type ExportCursor, type ExportFilter, type ExportMessageRow } from '../export-page.ts';
import type { ExportPage } from '../../shared/wire/transfer.ts';
import { forPostgres, RENAME_AGENT_ROW, RENAME_STATEMENTS, renamedFilter } from '../rename-agent.ts';

const UPSERT_AGENT = `INSERT INTO agents (name, config, created_at, updated_at) VALUES ($1, $2, $3, $3)
  ON CONFLICT (name) DO UPDATE SET config = EXCLUDED.config, updated_at = EXCLUDED.updated_at`;

/**
 * Seeds the config file's agents if the store never was: the meta row that
 * says so is inserted first, so of several daemons starting at once exactly
 * one seeds. Returns whether this call seeded.
 */
async function seedOnce(client: PoolClient, agents: Record<string, AgentConfig>): Promise<boolean> {
  const at = now();
  const marked = await client.query("INSERT INTO meta (key, value) VALUES ('agents_seeded', $1) ON CONFLICT (key) DO NOTHING", [at]);
  if (marked.rowCount === 0) return false;
  for (const [name, agent] of Object.entries(agents)) await client.query(UPSERT_AGENT, [name, JSON.stringify(agent), at]);
  return true;
}

export class PgDaemonStorage implements DaemonStorage {
  readonly #pool: pg.Pool;
  readonly #url: string;
  readonly #log: Logger;
  readonly #search: PgSessionSearch;

  constructor(pool: pg.Pool, url: string, log: Logger) {
    this.#pool = pool;
    this.#url = url;
    this.#log = log;
    this.#search = new PgSessionSearch(pool);
  }

  async prepare(seedAgents: Record<string, AgentConfig>): Promise<StoredStartupState> {
    await migrate(this.#pool, this.#url, this.#log);
    const seededNow = await inTransaction(this.#pool, (client) => seedOnce(client, seedAgents));
    return { ...(await this.readState()), seededNow };
  }

  async readState(): Promise<StoredStartupState> {
    const [agents, subscriptions] = await Promise.all([
      this.#pool.query<{ name: string; config: string }>('SELECT name, config FROM agents ORDER BY name'),
      this.#pool.query<SubscriptionRecord>('SELECT id, source, target_agent, once FROM subscriptions ORDER BY id'),
    ]);
    return { agents: agents.rows, seededNow: false, subscriptions: subscriptions.rows };
  }

  async listConversations(agent: string | null, sender: string | null): Promise<ConversationSummary[]> {
    const r = await this.#pool.query<ConversationSummary>(
      `SELECT agent, sender, title, message_count, created_at, updated_at FROM conversations
       WHERE ($1::text IS NULL OR agent = $1) AND ($2::text IS NULL OR sender = $2)
       ORDER BY updated_at DESC, id DESC`,
      [agent, sender],
    );
    return r.rows;
  }

  exportPage(filter: ExportFilter, cursor: ExportCursor, limit: number): Promise<ExportPage> {
    const pool = this.#pool;
    return exportPage({
      async conversationFrom(f, fromId) {
        const r = await pool.query<ExportConversationRow>(
          `SELECT id, agent, sender, title, created_at, updated_at, summary, summary_upto, message_count FROM conversations
           WHERE ($1::text IS NULL OR agent = $1) AND ($2::text IS NULL OR sender = $2) AND id >= $3 ORDER BY id LIMIT 1`,
          [f.agent, f.sender, fromId],
        );
        return r.rows[0] ?? null;
      },
      async messagesFrom(id, fromIdx, n) {
        const r = await pool.query<ExportMessageRow>('SELECT idx, role, content, agent, tool_calls, tool_call_id, name, is_error, stop_reason, created_at FROM messages WHERE conversation_id = $1 AND idx >= $2 ORDER BY idx LIMIT $3', [id, fromIdx, n]);
        return r.rows;
      },
    }, filter, cursor, limit);
  }

  search(options: SearchOptions): Promise<SessionHit[]> {
    return this.#search.search(options);
  }

  async insertSubscription(source: string, targetAgent: string, once: boolean): Promise<number> {
    const r = await this.#pool.query<{ id: number }>(
      'INSERT INTO subscriptions (source, target_agent, once, created_at) VALUES ($1, $2, $3, $4) RETURNING id',
      [source, targetAgent, once, now()],
    );
    return r.rows[0]!.id;
  }

  /** How many of the rows were deleted here: a `once` subscription is consumed by whoever deleted it. */
  async deleteSubscriptions(ids: readonly number[]): Promise<number> {
    if (ids.length === 0) return 0;
    const r = await this.#pool.query('DELETE FROM subscriptions WHERE id = ANY($1::bigint[])', [ids]);
    return r.rowCount ?? 0;
  }

  async upsertAgent(name: string, config: string): Promise<void> {
    await this.#pool.query(UPSERT_AGENT, [name, config, now()]);
  }

  /** The agent, its conversations (their messages, search entries and outcomes by cascade) and its subscriptions, at once. */
  async deleteAgent(name: string): Promise<void> {
    await inTransaction(this.#pool, async (client) => {
      await client.query('DELETE FROM conversations WHERE agent = $1', [name]);
      await client.query('DELETE FROM subscriptions WHERE target_agent = $1', [name]);
      await client.query('DELETE FROM agents WHERE name = $1', [name]);
    });
  }

  /** The agent and everything that names it, in one transaction (storage/rename-agent.ts); false when there is no such agent. */
  async renameAgent(from: string, to: string): Promise<boolean> {
    return inTransaction(this.#pool, async (client) => {
      if ((await client.query(forPostgres(RENAME_AGENT_ROW), [from, to, now()])).rowCount === 0) return false;
      for (const sql of RENAME_STATEMENTS) await client.query(forPostgres(sql), [from, to]);
      const hooks = await client.query<{ name: string; agents: string | null }>('SELECT name, agents FROM webhooks WHERE agents IS NOT NULL');
      for (const h of hooks.rows) {
        const agents = renamedFilter(h.agents, from, to);
        if (agents !== null) await client.query('UPDATE webhooks SET agents = $1 WHERE name = $2', [agents, h.name]);
      }
      return true;
    });
  }

  claimPartition(partition: number, epoch: number, revision: number): Promise<number | null> {
    return claimFence(this.#pool, partition, epoch, revision);
  }

  schedules(call: ScheduleCall): Promise<unknown> {
    return runPgScheduleCall(this.#pool, call);
  }

  webhooks(call: WebhookCall): Promise<unknown> {
    return runPgWebhookCall(this.#pool, call);
  }

  tokens(call: TokenCall): Promise<unknown> {
    return runPgTokenCall(this.#pool, call);
  }

  bucketEpoch(current: number | null): Promise<number> {
    return bucketEpoch(this.#pool, current);
  }

  /** PostgreSQL keeps its own house (autovacuum, checkpoints): nothing to do. */
  async maintain(): Promise<unknown> {
    return null;
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }
}
