/**
 * PROTOCOL §4.13 durable waiting over real daemons: a detached run waiting
 * for a tool approval is stored, so it survives kill -9 and a graceful
 * restart; afterwards get_run and list_runs show it waiting, and
 * approve_tool, a denial or its timeout continue it. Runs on SQLite and, in
 * the postgres project, on PostgreSQL (the home's database outlives the daemon).
 */
import { describe, expect, it } from 'vitest';
import type { AgentdClient, StreamEvent } from '../../src/client/index.ts';
import { cleanup, collect, startDaemon, type Daemon } from '../helpers/daemon.ts';
import { text, types, until } from '../helpers/events.ts';

const PEERS = '/call peers {}';
const CONFIG = {
  agents: {
    guarded: { model: 'echo', approve_tools: ['peers'] },
    brief: { model: 'echo', approve_tools: ['peers'], approval_timeout_ms: 5000 },
  },
};

const seqOf = (e: StreamEvent): number => (e as { seq: number }).seq;

/** Starts a detached turn that calls `peers` and reads it up to approval_required. */
async function waitingRun(d: Daemon, agent: string, sender: string): Promise<{ runId: string; seq: number; seen: StreamEvent[] }> {
  const c = await d.client();
  const it = c.stream(agent, PEERS, { sender, detach: true })[Symbol.asyncIterator]();
  const seen = await until(it, 'approval_required');
  expect(seen.at(-1)).toMatchObject({ type: 'approval_required', call_id: 'call_1_1', tool: 'peers', arguments: '{}' });
  return { runId: (seen[0] as { run_id: string }).run_id, seq: seqOf(seen.at(-1)!), seen };
}

/** Stops the daemon (kill -9 unless told) and starts another on the same home (and store). */
async function restart(d: Daemon, signal: NodeJS.Signals = 'SIGKILL'): Promise<Daemon> {
  await d.stop(signal);
  return startDaemon({ home: d.home });
}

/** A daemon for one test, cleaned up whichever daemon holds the home at the end. */
async function withDaemon(fn: (d: Daemon, swap: (next: Daemon) => void) => Promise<void>): Promise<void> {
  let d = await startDaemon({ config: CONFIG });
  try {
    await fn(d, (next) => (d = next));
  } finally {
    await cleanup(d);
  }
}

async function expectWaiting(c: AgentdClient, runId: string, agent: string, sender: string): Promise<void> {
  expect(await c.getRun(runId)).toMatchObject({
    run_id: runId, agent, sender, status: 'waiting', detached: true,
    pending_approvals: [{ call_id: 'call_1_1', tool: 'peers', arguments: '{}' }],
  });
  expect((await c.listRuns({ status: 'waiting' })).map((r) => r.run_id)).toEqual([runId]);
}

/** The frames after `seq`, through `end`, every seq above the one before. */
async function restOf(c: AgentdClient, runId: string, seq: number): Promise<StreamEvent[]> {
  const rest = await collect(c.joinRun(runId, seq));
  const seqs = [seq, ...rest.map(seqOf)];
  for (let i = 1; i < seqs.length; i++) expect(seqs[i]!).toBeGreaterThan(seqs[i - 1]!);
  expect(rest.at(-1)).toMatchObject({ type: 'end', stop_reason: 'text' });
  return rest;
}

const historyOf = async (c: AgentdClient, agent: string, sender: string): Promise<string[]> =>
  (await c.history(agent, sender)).messages.map((m) => `${m.role}: ${m.content}`);

describe('a run waiting for approval', () => {
  it('survives kill -9: waiting after the restart, approved, it completes; the pair\'s next turn waits behind it', async () => {
    await withDaemon(async (first, swap) => {
      const { runId, seq } = await waitingRun(first, 'guarded', 'kill-approve');
      const d = await restart(first);
      swap(d);
      const c = await d.client();
      await expectWaiting(c, runId, 'guarded', 'kill-approve');
      const later = collect((await d.client()).stream('guarded', 'after the wait', { sender: 'kill-approve' }));
      await c.approveTool(runId, 'call_1_1', true);
      const rest = await restOf(c, runId, seq);
      expect(types(rest).slice(0, 2)).toEqual(['tool_result', 'tools_complete']);
      expect(rest[0]).toMatchObject({ call_id: 'call_1_1', is_error: false });
      expect((rest[0] as { output: string }).output).toContain('"brief"'); // peers: the other agents
      expect(text(await later)).toBe('after the wait');
      expect(await c.getRun(runId)).toMatchObject({ status: 'done', stop_reason: 'text', pending_approvals: [] });
      const history = await historyOf(c, 'guarded', 'kill-approve');
      expect(history.slice(0, 3)).toEqual([`user: ${PEERS}`, 'assistant: ', history[2]]);
      expect(history[2]).toMatch(/^tool: .*"brief"/);
      expect(history.slice(3)).toEqual([`assistant: ${(rest[0] as { output: string }).output}`, 'user: after the wait', 'assistant: after the wait']);
      // Decided: nothing waits any more, so a later restart has nothing to resume.
      const again = await restart(d, 'SIGTERM');
      swap(again);
      const c2 = await again.client();
      expect(await c2.listRuns({ status: 'waiting' })).toEqual([]);
      expect(await historyOf(c2, 'guarded', 'kill-approve')).toEqual(history);
    });
  });

  it('survives kill -9 and takes a denial after the restart; a call it does not wait on is refused', async () => {
    await withDaemon(async (first, swap) => {
      const { runId, seq } = await waitingRun(first, 'guarded', 'kill-deny');
      const d = await restart(first);
      swap(d);
      const c = await d.client();
      await expectWaiting(c, runId, 'guarded', 'kill-deny');
      await expect(c.approveTool(runId, 'call_9_9', true)).rejects.toMatchObject({ code: 409 });
      await c.approveTool(runId, 'call_1_1', false, 'not on production');
      const rest = await restOf(c, runId, seq);
      expect(rest[0]).toMatchObject({ type: 'tool_result', call_id: 'call_1_1', is_error: true, output: 'denied: not on production' });
      expect(text(rest)).toBe('denied: not on production');
      await expect(c.approveTool(runId, 'call_1_1', true)).rejects.toMatchObject({ code: 409 });
      expect(await historyOf(c, 'guarded', 'kill-deny')).toEqual([`user: ${PEERS}`, 'assistant: ', 'tool: denied: not on production', 'assistant: denied: not on production']);
    });
  });

  it('times out after a kill -9 at its stored deadline (during the restart or after it)', async () => {
    await withDaemon(async (first, swap) => {
      const { runId, seq } = await waitingRun(first, 'brief', 'kill-timeout');
      const d = await restart(first);
      swap(d);
      const c = await d.client();
      const rest = await restOf(c, runId, seq);
      expect(rest[0]).toMatchObject({ type: 'tool_result', call_id: 'call_1_1', is_error: true, output: 'approval timed out' });
      expect(await c.getRun(runId)).toMatchObject({ status: 'done', pending_approvals: [] });
      expect(await historyOf(c, 'brief', 'kill-timeout')).toEqual([`user: ${PEERS}`, 'assistant: ', 'tool: approval timed out', 'assistant: approval timed out']);
    });
  });

  it('stays waiting through a graceful restart, and completes once approved', async () => {
    await withDaemon(async (first, swap) => {
      const { runId, seq } = await waitingRun(first, 'guarded', 'graceful');
      const d = await restart(first, 'SIGTERM');
      swap(d);
      const c = await d.client();
      await expectWaiting(c, runId, 'guarded', 'graceful');
      // The old daemon stored nothing of the turn: it is stored once, when it ends.
      await expect(c.history('guarded', 'graceful')).rejects.toMatchObject({ code: 404 });
      await c.approveTool(runId, 'call_1_1', true);
      const rest = await restOf(c, runId, seq);
      expect(rest[0]).toMatchObject({ type: 'tool_result', is_error: false });
      const history = await historyOf(c, 'guarded', 'graceful');
      expect(history.map((m) => m.split(':')[0])).toEqual(['user', 'assistant', 'tool', 'assistant']);
    });
  });
});
