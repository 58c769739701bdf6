/**
 * Once per test run: names the run, so the PostgreSQL databases its tests
 * create carry its prefix, and drops any of them still there at the end
 * (a daemon a failed test never stopped, say).
 */
import { randomBytes } from 'node:crypto';

export async function setup(): Promise<() => Promise<void>> {
  process.env.AGENTD_TEST_PG_RUN ??= randomBytes(4).toString('hex');
  return async () => {
    const { dropRunDatabases } = await import('./helpers/postgres.ts');
    await dropRunDatabases();
  };
}
