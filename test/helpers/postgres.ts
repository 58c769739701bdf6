/**
 * A PostgreSQL database of its own for each test that needs one: created on
 * the server AGENTD_TEST_PG_URL names (default: the development and CI
 * server, 127.0.0.1:5432 with trust authentication) and dropped afterwards.
 * Where no server answers, `needPostgres()` fails the tests under CI and
 * skips them elsewhere, printing why (test/helpers/service-gate.ts).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { onTestFinished } from 'vitest';
import { safeUrl } from '../../src/storage/postgres/pool.ts';
import { skipReason } from './service-gate.ts';

/** Any database on the server: it is only used to create and drop the tests' own. */
export const PG_ADMIN_URL = process.env.AGENTD_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const HOW_TO_RUN = 'start PostgreSQL on 127.0.0.1:5432 with trust authentication, or set AGENTD_TEST_PG_URL=postgres://user@host:port/db (a role that may CREATE DATABASE)';

let probed: Promise<string | null> | undefined;

/** Null when the server answers; otherwise why not, and how to run the PostgreSQL tests (the benches read it as it is). */
export function pgUnavailable(): Promise<string | null> {
  probed ??= (async () => {
    const client = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 5_000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return null;
    } catch (err) {
      return `no PostgreSQL server answered at ${safeUrl(PG_ADMIN_URL)} (${(err as Error).message}); to run the PostgreSQL tests, ${HOW_TO_RUN}`;
    } finally {
      await client.end().catch(() => undefined);
    }
  })();
  return probed;
}

/**
 * For a test file that needs PostgreSQL: null when the server answers; under
 * CI otherwise throws (the file fails); elsewhere prints and returns why the
 * tests are skipped.
 */
export async function needPostgres(): Promise<string | null> {
  return skipReason(await pgUnavailable());
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export interface TestDatabase {
  url: string;
  name: string;
  /** Drops the database, ending whatever connections still use it. */
  drop(): Promise<void>;
  /** Ends every connection to the database from the server's side, as a crash of their process would. */
  terminateConnections(): Promise<void>;
  /** Runs SQL on the database through a connection of its own. */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, params?: unknown[]): Promise<R[]>;
}

/**
 * This test run's prefix (test/global-setup.ts sets it for every test process):
 * a database a crashed or unstopped test left behind is dropped at the end of
 * its run, and never one of a run beside it.
 */
const RUN = process.env.AGENTD_TEST_PG_RUN ?? randomBytes(4).toString('hex');
const RUN_PREFIX = `agentd_t_${RUN}_`;

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `${RUN_PREFIX}${randomBytes(6).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  const u = new URL(PG_ADMIN_URL);
  u.pathname = `/${name}`;
  const url = u.toString();
  return {
    url,
    name,
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
    terminateConnections: () =>
      admin((c) => c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name])).then(() => undefined),
    query: async <R extends pg.QueryResultRow>(sql: string, params: unknown[] = []) => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        return (await client.query<R>(sql, params)).rows;
      } finally {
        await client.end();
      }
    },
  };
}

/** A database of its own for the running test, dropped when the test ends. */
export async function testDatabase(): Promise<TestDatabase> {
  const db = await createTestDatabase();
  onTestFinished(() => db.drop());
  return db;
}

/** Drops every database this run created and did not drop (the end of the run). */
export async function dropRunDatabases(): Promise<number> {
  if ((await pgUnavailable()) !== null) return 0;
  return admin(async (c) => {
    const { rows } = await c.query<{ datname: string }>("SELECT datname FROM pg_database WHERE starts_with(datname, $1)", [RUN_PREFIX]);
    for (const { datname } of rows) await c.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
    return rows.length;
  });
}
