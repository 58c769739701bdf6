import { defineConfig } from 'vitest/config';

/** The suites that touch storage run a second time on a PostgreSQL store. */
const STORAGE_SUITES = ['test/e2e/storage.test.ts', 'test/e2e/bus.test.ts', 'test/e2e/agents.test.ts', 'test/e2e/turns.test.ts', 'test/e2e/schedules.test.ts', 'test/e2e/webhooks.test.ts', 'test/e2e/runs.test.ts', 'test/e2e/steer.test.ts', 'test/e2e/approvals.test.ts', 'test/e2e/tokens.test.ts', 'test/e2e/durable-waiting.test.ts'];

export default defineConfig({
  test: {
    // End-to-end files each start real daemons with worker threads: on a
    // 2-core machine, two files at a time keeps them from starving each other.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    globalSetup: ['test/global-setup.ts'],
    projects: [
      { extends: true, test: { name: 'sqlite', include: ['test/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: STORAGE_SUITES,
          env: { AGENTD_TEST_STORE: 'postgres' },
          setupFiles: ['test/pg-project-setup.ts'],
        },
      },
    ],
  },
});
