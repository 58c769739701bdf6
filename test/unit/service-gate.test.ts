/**
 * A CI run cannot come out green by skipping the tests that need PostgreSQL
 * or NATS: under CI=true a missing service fails them; elsewhere they skip,
 * saying why. The decision on its own, then, with both services pointed at a
 * port where nothing listens, vitest itself on suites that need each, and
 * the helpers those suites call first, in and out of CI.
 */
import { spawn } from 'node:child_process';
import net from 'node:net';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decide, inCi, skipReason, ServiceMissingError } from '../helpers/service-gate.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const VITEST = resolve(ROOT, 'node_modules/vitest/vitest.mjs');
const MISSING = 'no NATS server answered at nats://127.0.0.1:1';

describe('the service gate', () => {
  it('reads CI the way CI services set it', () => {
    for (const on of ['true', '1', 'TRUE', 'yes']) expect(inCi({ CI: on })).toBe(true);
    for (const off of [undefined, '', 'false', '0', ' FALSE ']) expect(inCi({ CI: off })).toBe(false);
  });

  it('runs when the service answered, fails under CI when it did not, and skips elsewhere', () => {
    expect(decide(null, { CI: 'true' })).toEqual({ action: 'run' });
    expect(decide(null, {})).toEqual({ action: 'run' });
    expect(decide(MISSING, { CI: 'true' })).toEqual({ action: 'fail', reason: expect.stringContaining(MISSING) });
    expect(decide(MISSING, {})).toEqual({ action: 'skip', reason: `skipped: ${MISSING}` });
    expect(() => skipReason(MISSING, { CI: 'true' })).toThrow(ServiceMissingError);
  });
});

/** A loopback port nothing listens on: one the system just handed out and took back. */
async function deadPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

function envWithoutServices(ci: string, port: number): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('VITEST')) env[k] = v;
  return Object.assign(env, { CI: ci, AGENTD_TEST_NATS_URL: `nats://127.0.0.1:${port}`, AGENTD_TEST_PG_URL: `postgres://postgres@127.0.0.1:${port}/test`, NO_COLOR: '1' });
}

async function run(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, args, { cwd: ROOT, env });
  let output = '';
  child.stdout.on('data', (b: Buffer) => (output += b.toString()));
  child.stderr.on('data', (b: Buffer) => (output += b.toString()));
  const code = await new Promise<number | null>((r) => child.on('close', r));
  return { code, output };
}

// A suite needing NATS, one needing PostgreSQL, and the postgres project,
// whose setup file gates every suite it runs (bus.test.ts runs in both
// projects; in the sqlite one it needs nothing, and `-t` runs none of it).
const NEEDING_SERVICES = ['--project', 'sqlite', '--project', 'postgres', 'test/unit/cluster-forward.test.ts', 'test/unit/pg-store.test.ts', 'test/e2e/bus.test.ts'];
const NO_TEST = ['-t', 'a test name that no test has'];
/** What a test file does first: ask for its services (a plain Node process: far cheaper than vitest). */
const ASK_HELPERS = [
  '--import', 'tsx', '--input-type=module', '-e',
  "const { needNats } = await import('./test/helpers/nats.ts'); const { needPostgres } = await import('./test/helpers/postgres.ts'); await needNats(); await needPostgres();",
];

// Starting vitest on a busy 2-core machine can take a minute.
describe('suites that need a service, run without it', { timeout: 180_000 }, () => {
  it('fail under CI=true, naming the service and how to provide it', async () => {
    const { code, output } = await run([VITEST, 'run', ...NO_TEST, ...NEEDING_SERVICES], envWithoutServices('true', await deadPort()));
    expect(code, output).not.toBe(0);
    const failures = output.match(/ServiceMissingError: CI is set, so this fails instead of skipping: no (NATS|PostgreSQL) server/g) ?? [];
    expect(failures.sort(), output).toEqual([
      'ServiceMissingError: CI is set, so this fails instead of skipping: no NATS server',
      'ServiceMissingError: CI is set, so this fails instead of skipping: no PostgreSQL server',
      'ServiceMissingError: CI is set, so this fails instead of skipping: no PostgreSQL server',
    ]);
    expect(output).toMatch(/Test Files\s+3 failed \| 1 skipped/);
  });

  it('skip outside CI, printing why', async () => {
    const port = await deadPort();
    const { code, output } = await run(ASK_HELPERS, envWithoutServices('', port));
    expect(code, output).toBe(0);
    expect(output).toContain(`skipped: no NATS server with JetStream answered at nats://127.0.0.1:${port}`);
    expect(output).toContain(`skipped: no PostgreSQL server answered at postgres://postgres@127.0.0.1:${port}/test`);
    const ci = await run(ASK_HELPERS, envWithoutServices('true', port));
    expect(ci.code).not.toBe(0);
    expect(ci.output).toContain('ServiceMissingError: CI is set, so this fails instead of skipping: no NATS server');
  });
});
