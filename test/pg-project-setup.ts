/**
 * The vitest project "postgres" runs the storage suites on a PostgreSQL store
 * (AGENTD_TEST_STORE=postgres). Where no server answers, every test of the
 * project is skipped, with the reason and how to run them printed.
 */
import { beforeEach } from 'vitest';
import { pgUnavailable } from './helpers/postgres.ts';

const why = await pgUnavailable();
if (why !== null) {
  console.warn(why);
  beforeEach((ctx) => ctx.skip(why));
}
