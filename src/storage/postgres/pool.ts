/**
 * A thread's connections to a PostgreSQL store: a small pg.Pool, and the
 * one way this code runs a transaction on it. Each shard and each storage
 * thread has its own pool, so none waits on another's connections.
 */
import pg from 'pg';
import type { Logger } from '../../shared/log.ts';
import { describeStore } from '../../shared/store-location.ts';

export type { PoolClient } from 'pg';

/** Connections per pool of a storage thread. */
export const POOL_CONNECTIONS = 2;

/** Group commits a shard keeps under way at once (conversations.ts says why two). */
export const SHARD_COMMITS_IN_FLIGHT = 2;

/** Connections per pool of a shard: one per commit in flight, and one for loads beside them. */
export const SHARD_POOL_CONNECTIONS = SHARD_COMMITS_IN_FLIGHT + 1;

/** How long taking a new connection may wait for the server. */
const CONNECT_TIMEOUT_MS = 10_000;

/** Row ids are bigint; they fit a double (2^53), so they come back as numbers, as from SQLite. */
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format ?? 'text')) as pg.CustomTypesConfig['getTypeParser'],
};

/** The store's URL without its password, for messages and logs. */
export function safeUrl(url: string): string {
  return describeStore({ kind: 'postgres', url });
}

export function openPool(url: string, log: Logger, max = POOL_CONNECTIONS): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    types,
    application_name: 'agentd',
    // A commit returns once it is on disk: a turn's `end` promises that, whatever the server's default
    // or the URL's `options` say. Awaited before the pool hands the connection out.
    onConnect: (client) => client.query('SET synchronous_commit = on').then(() => undefined),
    // A server that stops answering fails the write (the turn's `end` says so) instead of holding it forever.
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true,
    // Queries issued together go out together: a group commit's statements cost one round trip (pg-turns.ts).
    pipeline: true,
  });
  // An idle connection the server drops must not take the thread down; the next query reconnects.
  pool.on('error', (err) => log.warn({ err: err.message, store: safeUrl(url) }, 'an idle PostgreSQL connection failed'));
  return pool;
}

/** A pool whose server answered: a wrong URL or an unreachable server fails here, at start-up, saying which store. */
export async function connectPool(url: string, log: Logger, max = POOL_CONNECTIONS): Promise<pg.Pool> {
  const pool = openPool(url, log, max);
  try {
    await pool.query('SELECT 1');
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw new Error(`cannot reach the PostgreSQL store ${safeUrl(url)}: ${(err as Error).message}`);
  }
  return pool;
}

/** Runs `fn` in a transaction on one connection: COMMIT when it resolves, ROLLBACK when it throws. */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  // A connection whose BEGIN, COMMIT or ROLLBACK failed is closed, not given back for reuse.
  let healthy = false;
  try {
    await client.query('BEGIN');
    let out: T;
    try {
      out = await fn(client);
    } catch (err) {
      await client.query('ROLLBACK').then(() => (healthy = true), () => undefined);
      throw err;
    }
    const commit = await client.query('COMMIT');
    healthy = true;
    // COMMIT of a transaction a failed statement aborted answers ROLLBACK instead of failing.
    if (commit.command !== 'COMMIT') throw new Error('the transaction was rolled back by the server');
    return out;
  } finally {
    client.release(!healthy);
  }
}
