/**
 * .ci/run's reading of vitest's JSON report: counts passed, failed and
 * skipped tests, names every skipped one, and under CI counts as a failure
 * any skip in a suite that needs a service (its file imports the PostgreSQL
 * or NATS test helper) and any file skipped whole (how the postgres project
 * looks without its server). The helpers already fail such suites under CI
 * (test/helpers/service-gate.ts); this catches a skip that went around them.
 * Prints "N passed, N failed" last; exits 1 on any failure, and when vitest
 * itself failed (an unhandled error fails a run whose tests all passed).
 *
 * Usage: node --import tsx .ci/summary.ts REPORT.json VITEST_EXIT_STATUS
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { inCi } from '../test/helpers/service-gate.ts';

export interface AssertionResult {
  fullName: string;
  status: string;
}

export interface FileResult {
  name: string;
  status: string;
  message: string;
  assertionResults: AssertionResult[];
}

export interface JsonReport {
  testResults: FileResult[];
}

export interface Summary {
  passed: number;
  failed: number;
  skipped: number;
  /** What to print, the counts last. */
  lines: string[];
}

/** A file that imports one of these helpers needs that service to run. */
const SERVICE_HELPER = /from '(\.\.\/)+helpers\/(postgres|nats)\.ts'/;

export function needsServiceBySource(source: string): boolean {
  return SERVICE_HELPER.test(source);
}

const isSkip = (status: string): boolean => status === 'skipped' || status === 'pending' || status === 'todo';

/**
 * `needsService(file)`: whether the test file needs PostgreSQL or NATS; `ci`:
 * whether such skips fail the run; `vitestExit`: vitest's exit status.
 */
export function summarize(report: JsonReport, needsService: (file: string) => boolean, ci: boolean, vitestExit: number, root = process.cwd()): Summary {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  const lines: string[] = [];
  const forbidden: string[] = [];
  for (const file of report.testResults) {
    const name = relative(root, file.name);
    const tests = file.assertionResults;
    passed += tests.filter((t) => t.status === 'passed').length;
    const failedHere = tests.filter((t) => t.status === 'failed').length;
    failed += failedHere;
    if (file.status === 'failed' && failedHere === 0) {
      failed++; // a file that failed before any test ran (an import, a top-level throw)
      lines.push(`failed to run: ${name}: ${file.message.split('\n')[0]}`);
    }
    const skips = tests.filter((t) => isSkip(t.status));
    skipped += skips.length;
    for (const t of skips) lines.push(`skipped: ${name} > ${t.fullName}`);
    if (skips.length === 0) continue;
    if (needsService(file.name)) forbidden.push(`${name}: ${skips.length} skipped, and it needs PostgreSQL or NATS`);
    else if (skips.length === tests.length) forbidden.push(`${name}: every test skipped`);
  }
  if (ci && forbidden.length > 0) {
    lines.push('under CI these skips are failures (start PostgreSQL and NATS; a whole file may not be skipped):');
    for (const f of forbidden) lines.push(`  ${f}`);
    failed += forbidden.length;
  }
  if (vitestExit !== 0 && failed === 0) {
    lines.push(`vitest exited ${vitestExit} though no test failed (an unhandled error, say: see its output above)`);
    failed++;
  }
  if (passed === 0 && failed === 0) {
    lines.push('no test passed');
    failed++;
  }
  lines.push(`${skipped} skipped`, `${passed} passed, ${failed} failed`);
  return { passed, failed, skipped, lines };
}

function main(reportPath: string, vitestExit: number): number {
  const report = JSON.parse(readFileSync(reportPath, 'utf8')) as JsonReport;
  const needsService = (file: string): boolean => needsServiceBySource(readFileSync(file, 'utf8'));
  const summary = summarize(report, needsService, inCi(), vitestExit);
  for (const line of summary.lines) console.log(line);
  return summary.failed === 0 ? 0 : 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [reportPath, exitArg] = process.argv.slice(2);
  const vitestExit = Number(exitArg);
  if (reportPath === undefined || !Number.isInteger(vitestExit)) {
    console.error('usage: node --import tsx .ci/summary.ts REPORT.json VITEST_EXIT_STATUS');
    process.exit(2);
  }
  process.exit(main(reportPath, vitestExit));
}
