/**
 * .ci/run's reading of the test report (.ci/summary.ts): skipped tests are
 * counted and named, and under CI a skipped suite that needs PostgreSQL or
 * NATS, or a file skipped whole, fails the run, the counts printed last.
 */
import { describe, expect, it } from 'vitest';
import { needsServiceBySource, summarize, type FileResult, type JsonReport } from '../../.ci/summary.ts';

const file = (name: string, statuses: string[], status = 'passed', message = ''): FileResult => ({
  name: `/repo/${name}`,
  status,
  message,
  assertionResults: statuses.map((s, i) => ({ fullName: `case ${i}`, status: s })),
});
const report = (...testResults: FileResult[]): JsonReport => ({ testResults });
const needsService = (f: string): boolean => f.includes('cluster');
const run = (r: JsonReport, ci: boolean, vitestExit = 0) => summarize(r, needsService, ci, vitestExit, '/repo');

describe('the CI summary', () => {
  it('counts passed, failed and skipped tests, names the skipped, and prints the counts last', () => {
    const s = run(report(file('a.test.ts', ['passed', 'passed', 'skipped']), file('b.test.ts', ['failed', 'passed'], 'failed')), true);
    expect(s).toMatchObject({ passed: 3, failed: 1, skipped: 1 });
    expect(s.lines).toContain('skipped: a.test.ts > case 2');
    expect(s.lines.slice(-2)).toEqual(['1 skipped', '3 passed, 1 failed']);
  });

  it('under CI, fails a skip in a suite that needs a service and a file skipped whole', () => {
    const r = report(file('cluster.test.ts', ['passed', 'skipped']), file('bus.test.ts', ['skipped', 'skipped']), file('c.test.ts', ['passed']));
    const s = run(r, true);
    expect(s.failed).toBe(2);
    expect(s.lines.join('\n')).toContain('cluster.test.ts: 1 skipped, and it needs PostgreSQL or NATS');
    expect(s.lines.join('\n')).toContain('bus.test.ts: every test skipped');
    expect(s.lines.at(-1)).toBe('2 passed, 2 failed');
    expect(run(r, false).failed).toBe(0); // outside CI the skips are only reported
  });

  it('counts a file that failed before any test ran, and a vitest failure no test shows', () => {
    const s = run(report(file('a.test.ts', ['passed']), file('cluster.test.ts', [], 'failed', 'ServiceMissingError: no NATS\nstack')), true, 1);
    expect(s.lines).toContain('failed to run: cluster.test.ts: ServiceMissingError: no NATS');
    expect(s.lines.at(-1)).toBe('1 passed, 1 failed');
    expect(run(report(file('a.test.ts', ['passed'])), true, 1).lines.at(-1)).toBe('1 passed, 1 failed');
    expect(run(report(), true).lines.at(-1)).toBe('0 passed, 1 failed');
  });

  it('tells a suite that needs a service by its import of the PostgreSQL or NATS helper', () => {
    expect(needsServiceBySource("import { needNats } from '../helpers/nats.ts';")).toBe(true);
    expect(needsServiceBySource("import { testDatabase } from '../helpers/postgres.ts';")).toBe(true);
    expect(needsServiceBySource("import { testDaemon } from '../helpers/daemon.ts';")).toBe(false);
  });
});
