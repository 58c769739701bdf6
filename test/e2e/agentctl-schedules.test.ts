/**
 * `agentctl schedules ...` and `agentctl webhooks ...` against a real daemon:
 * add, list (bare group name too), rm, deliveries, the secret kept off the
 * command line and out of every output, and the usage errors.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ctl } from '../helpers/cli.ts';
import { cleanup, startDaemon, makeHome, type Daemon } from '../helpers/daemon.ts';

// Every CLI run starts a Node process that compiles TypeScript.
vi.setConfig({ testTimeout: 180_000 });

const SECRET = 'whsec-cli-0123456789abcdef';
let d: Daemon;
const run = (...args: string[]) => ctl(d.socketPath, args, { HOOK_SECRET: SECRET });

beforeAll(async () => {
  d = await startDaemon({ home: makeHome({ agents: { assistant: { model: 'echo' } } }) });
});
afterAll(async () => {
  await cleanup(d);
});

describe('agentctl schedules', () => {
  it('adds, lists and removes schedules; refuses two timings', async () => {
    const added = await run('schedules', 'add', 'standup', 'standup.time', 'time', 'for', 'standup', '--cron', '0 9 * * 1-5', '--timezone', 'Europe/Berlin');
    expect(added.stderr).toBe('');
    expect(added.code).toBe(0);
    expect(added.stdout).toMatch(/^schedule standup: cron 0 9 \* \* 1-5 \(Europe\/Berlin\) -> standup\.time, next \d{4}-/);
    expect((await run('schedules', 'add', 'tick', 'tick', '--every', '60000', '--catch-up', 'one')).code).toBe(0);
    const listed = await run('schedules');
    expect(listed.stdout.split('\n')[0]).toMatch(/^NAME\s+SOURCE\s+WHEN\s+NEXT\s+FIRES/);
    expect(listed.stdout).toMatch(/standup\s+standup\.time\s+cron 0 9/);
    expect(listed.stdout).toMatch(/tick\s+tick\s+every 60000 ms/);
    const asJson = JSON.parse((await run('schedules', 'list', '--json')).stdout) as { schedules: { name: string; payload: string }[] };
    expect(asJson.schedules.map((s) => [s.name, s.payload])).toEqual([['standup', 'time for standup'], ['tick', '']]);
    const two = await run('schedules', 'add', 'x', 'y', '--every', '1000', '--at', '2030-01-01T00:00:00Z');
    expect(two.code).toBe(2);
    expect(two.stderr).toMatch(/exactly one of --cron EXPR, --every MS and --at TIME/);
    const bad = await run('schedules', 'add', 'x', 'y', '--every', '10');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/every_ms must be from 1000/);
    expect((await run('schedules', 'rm', 'tick')).stdout).toBe('removed schedule tick\n');
    expect((await run('schedules', 'rm', 'tick')).stderr).toMatch(/no schedule "tick"/);
  });
});

describe('agentctl webhooks', () => {
  it('adds a webhook with the secret from an environment variable, lists it without the secret, shows deliveries, removes it', async () => {
    const noSecret = await run('webhooks', 'add', 'ops', 'http://127.0.0.1:9/hook', '--events', 'turn_end');
    expect(noSecret.code).toBe(2);
    expect(noSecret.stderr).toMatch(/needs --secret-env VAR/);
    const added = await run('webhooks', 'add', 'ops', 'http://127.0.0.1:9/hook', '--events', 'turn_end,approval_required', '--agents', 'assistant', '--secret-env', 'HOOK_SECRET');
    expect(added.stderr).toBe('');
    expect(added.stdout).toBe('webhook ops: turn_end,approval_required -> http://127.0.0.1:9/hook\n');
    const listed = await run('webhooks');
    expect(listed.stdout).toMatch(/ops\s+http:\/\/127\.0\.0\.1:9\/hook\s+turn_end,approval_required\s+assistant\s+0/);
    expect(listed.stdout + (await run('webhooks', 'list', '--json')).stdout).not.toContain(SECRET);
    expect((await run('send', 'assistant', 'hello')).code).toBe(0);
    const pending = await run('webhooks', 'deliveries', 'ops', '--status', 'pending', '--json');
    const deliveries = (JSON.parse(pending.stdout) as { deliveries: { kind: string; agent: string; sender: string }[] }).deliveries;
    expect(deliveries.map((x) => [x.kind, x.agent, x.sender])).toEqual([['turn_end', 'assistant', 'user']]);
    expect((await run('webhooks', 'deliveries', 'ops', '--status', 'lost')).stderr).toMatch(/--status is pending, delivered or failed/);
    expect((await run('webhooks', 'rm', 'ops')).stdout).toBe('removed webhook ops\n');
    expect((await run('webhooks')).stdout).toBe('no webhooks\n');
  });
});
