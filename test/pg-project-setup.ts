/**
 * The vitest project "postgres" runs the storage suites on a PostgreSQL store
 * (AGENTD_TEST_STORE=postgres). Where no server answers, every test of the
 * project fails under CI and is skipped elsewhere, with the reason and how
 * to run them printed (test/helpers/service-gate.ts).
 */
import { beforeEach } from 'vitest';
import { needPostgres } from './helpers/postgres.ts';

const why = await needPostgres();
if (why !== null) beforeEach((ctx) => ctx.skip(why));
