/** agentctl's run commands against a real daemon: stream --detach, runs, run, join. */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ctl } from '../helpers/cli.ts';
import { cleanup, startDaemon, type Daemon } from '../helpers/daemon.ts';

vi.setConfig({ testTimeout: 180_000 });

let d: Daemon;
const run = (...args: string[]) => ctl(d.socketPath, args);

beforeAll(async () => {
  d = await startDaemon({ config: { agents: { assistant: { model: 'echo' } } } });
});
afterAll(() => cleanup(d));

describe('agentctl runs, run and join', () => {
  it('a detached stream is listed, shown and joined again', async () => {
    const streamed = await run('stream', 'assistant', 'hello', 'runs', '--detach', '--sender', 'cli-runs', '--json');
    expect(streamed.code).toBe(0);
    const events = streamed.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    const runId = events[0]!.run_id as string;
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));

    const [listed, shown, joined, bad] = await Promise.all([
      run('runs', '--sender', 'cli-runs', '--json'),
      run('run', runId),
      run('join', runId, '--after', '1'),
      run('runs', '--status', 'sleeping'),
    ]);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ run_id: runId, status: 'done', detached: true })]);
    expect(shown.stdout).toMatch(new RegExp(`run\\s+${runId}\\nstatus\\s+done\\n`));
    expect(joined).toMatchObject({ code: 0, stdout: 'hello runs\n' });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--status must be one of queued, running, waiting, done, failed, cancelled, stalled');
  });

  it('a run the daemon does not know exits 1 with the 404', async () => {
    const r = await run('run', 'r00000000-zz-1');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('no run "r00000000-zz-1"');
  });
});
