/** PROTOCOL §4.13 tool approvals over real sockets: approve_tools, approval_required, waiting, approve, deny, timeout. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentdClient, StreamEvent } from '../../src/client/index.ts';
import { cleanup, collect, startDaemon, testClient, waitFor, type Daemon } from '../helpers/daemon.ts';
import { text, types, watchEvents, until } from '../helpers/events.ts';

let d: Daemon;
beforeAll(async () => {
  d = await startDaemon({
    workers: 2,
    config: {
      agents: {
        guarded: { model: 'echo', approve_tools: ['peers'] },
        everything: { model: 'echo', approve_tools: ['*'], approval_timeout_ms: 50 },
        open: { model: 'echo' },
      },
    },
  });
});
afterAll(() => cleanup(d));

const client = (): Promise<AgentdClient> => testClient(d);
const PEERS = '/call peers {}';

async function rest(it: AsyncIterator<StreamEvent>): Promise<StreamEvent[]> {
  const seen: StreamEvent[] = [];
  for (let r = await it.next(); !r.done; r = await it.next()) seen.push(r.value);
  return seen;
}

/** Starts a turn that calls `peers` and reads it up to approval_required; returns the iterator and the run id. */
async function waiting(c: AgentdClient, agent: string, sender: string): Promise<{ it: AsyncIterator<StreamEvent>; runId: string; seen: StreamEvent[] }> {
  const it = c.stream(agent, PEERS, { sender })[Symbol.asyncIterator]();
  const seen = await until(it, 'approval_required');
  return { it, runId: (seen[0] as { run_id: string }).run_id, seen };
}

describe('a tool in approve_tools', () => {
  it('waits for approve_tool: the run is waiting, later turns queue behind it, approval runs the tool', async () => {
    const c = await client();
    const observer = await client();
    const events = await watchEvents(observer, 'guarded');
    const { it, runId, seen } = await waiting(c, 'guarded', 'approve');
    expect(seen.at(-1)).toMatchObject({ type: 'approval_required', call_id: 'call_1_1', tool: 'peers', arguments: '{}' });
    const other = await client();
    expect(await other.getRun(runId)).toMatchObject({ status: 'waiting', pending_approvals: [{ call_id: 'call_1_1', tool: 'peers', arguments: '{}' }] });
    expect((await other.listRuns({ agent: 'guarded', status: 'waiting' })).map((r) => r.run_id)).toEqual([runId]);
    await waitFor(() => events.some((e) => e.type === 'waiting'), 'the waiting agent event');
    expect(events.find((e) => e.type === 'waiting')).toMatchObject({ run_id: runId, sender: 'approve', tool_calls: [{ id: 'call_1_1', name: 'peers', arguments: '{}' }] });

    await expect(other.stream('guarded', 'refused', { sender: 'approve', on_busy: 'reject' })[Symbol.asyncIterator]().next()).rejects.toMatchObject({ code: 409 });
    const queued = collect(other.stream('guarded', 'after the wait', { sender: 'approve' }));
    await other.approveTool(runId, 'call_1_1', true);
    const after = await rest(it);
    expect(types(after).slice(0, 2)).toEqual(['tool_result', 'tools_complete']);
    expect(after[0]).toMatchObject({ is_error: false });
    expect((after[0] as { output: string }).output).toContain('"open"');
    expect(after.at(-1)).toMatchObject({ type: 'end', stop_reason: 'text' });
    expect(text(await queued)).toBe('after the wait');
    expect(await other.getRun(runId)).toMatchObject({ status: 'done', pending_approvals: [] });
  });

  it('a denial gives the model an error result carrying the reason', async () => {
    const c = await client();
    const { it, runId } = await waiting(c, 'guarded', 'deny');
    await (await client()).approveTool(runId, 'call_1_1', false, 'not on production');
    const after = await rest(it);
    expect(after[0]).toMatchObject({ type: 'tool_result', call_id: 'call_1_1', is_error: true, output: 'denied: not on production' });
    expect(text(after)).toBe('denied: not on production');
    const history = (await c.history('guarded', 'deny')).messages.map((m) => `${m.role}: ${m.content}`);
    expect(history).toEqual([`user: ${PEERS}`, 'assistant: ', 'tool: denied: not on production', 'assistant: denied: not on production']);
  });

  it('past approval_timeout_ms the call is denied with "approval timed out"', async () => {
    const c = await client();
    const evs = await collect(c.stream('everything', PEERS, { sender: 'timeout' }));
    expect(types(evs)).toContain('approval_required');
    expect(evs.find((e) => e.type === 'tool_result')).toMatchObject({ is_error: true, output: 'approval timed out' });
    expect(evs.at(-1)).toMatchObject({ stop_reason: 'text' });
  });

  it('tools outside approve_tools run at once; kill cancels a waiting run', async () => {
    const c = await client();
    expect(types(await collect(c.stream('open', PEERS, { sender: 'free' })))).not.toContain('approval_required');
    const { it, runId } = await waiting(c, 'guarded', 'killed');
    await (await client()).kill('guarded', 'killed');
    expect((await rest(it)).at(-1)).toMatchObject({ stop_reason: 'cancelled', error: 'cancelled by kill' });
    expect(await c.getRun(runId)).toMatchObject({ status: 'cancelled', pending_approvals: [] });
  });

  it('approve_tool refuses what it cannot do: 409, 404, 400', async () => {
    const c = await client();
    const { it, runId } = await waiting(c, 'guarded', 'refusals');
    await expect(c.approveTool(runId, 'call_9_9', true)).rejects.toMatchObject({ code: 409 });
    await expect(c.approveTool('r00000000-zz-1', 'call_1_1', true)).rejects.toMatchObject({ code: 404 });
    await expect(c.request('approve_tool', { run_id: runId, call_id: 'call_1_1' })).rejects.toMatchObject({ code: 400, message: 'approve_tool.approve is required' });
    await c.approveTool(runId, 'call_1_1', true);
    await rest(it);
    await expect(c.approveTool(runId, 'call_1_1', true)).rejects.toMatchObject({ code: 409 });
  });
});
