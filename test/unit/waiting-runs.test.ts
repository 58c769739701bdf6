/**
 * Durable waiting in the shard (runs/waiting-runs.ts), on the in-memory
 * store: approval_required goes out only once the wait is stored; a second
 * scheduler on the same store (a restarted daemon) resumes the run under
 * its id; a deadline that passed while no one served it times out at once;
 * a row it cannot read is left in the store and the others still resume.
 */
import { describe, expect, it } from 'vitest';
import { TurnScheduler } from '../../src/shard/turn-scheduler.ts';
import { Models } from '../../src/models/index.ts';
import type { Harness } from '../../src/shard/tools/harness.ts';
import type { Tool } from '../../src/shard/tools/tools.ts';
import { validateAgentConfig } from '../../src/shared/config-checks.ts';
import { createLogger } from '../../src/shared/log.ts';
import { turnRequest } from '../../src/main/turn-request.ts';
import { fakeOutbox, type Frame } from '../helpers/outbox.ts';
import { MemoryStorage } from '../helpers/memory-storage.ts';
import type { WaitingRunRecord } from '../../src/storage/contract.ts';
import type { StoredWaitingRun } from '../../src/shard/runs/waiting-runs.ts';

/** A store whose waiting-run saves wait until the test lets them through. */
class HeldSaves extends MemoryStorage {
  held: (() => void)[] = [];
  hold = false;
  override async saveWaitingRun(run: WaitingRunRecord): Promise<void> {
    if (this.hold) await new Promise<void>((r) => this.held.push(r));
    return super.saveWaitingRun(run);
  }
}

const probe: Tool = { name: 'probe', description: 'answers ran', parameters: { type: 'object' }, run: () => 'ran' };

function scheduler(storage: MemoryStorage) {
  const out = fakeOutbox();
  const s = new TurnScheduler({
    outbox: out,
    agents: { a: validateAgentConfig({ model: 'echo', approve_tools: ['probe'] }, 'test', 'a') },
    log: createLogger('silent'),
    store: storage,
    memoryConversations: 100,
    models: new Models({}),
    harness: { toolsFor: async () => new Map([['probe', probe]]) } as unknown as Harness,
  });
  return { out, s };
}

const events = (frames: Frame[], req: number): string[] => frames.filter((f) => f.req === req).map((f) => Object.keys(f.value.stream ?? f.value)[0]!);
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 10_000 && !check(); i++) await tick();
  expect(check()).toBe(true);
}

/** A detached turn of pair a/s that calls probe, up to its stored wait; returns its run id. */
async function waiting(storage: HeldSaves): Promise<string> {
  const { out, s } = scheduler(storage);
  storage.hold = true;
  s.handle(turnRequest({ conn: 1, req: 1, mode: 'stream', agent: 'a', sender: 's', content: '/call probe {}', detach: true }));
  await until(() => storage.held.length === 1);
  for (let i = 0; i < 20; i++) await tick();
  expect(events(out.frames, 1)).not.toContain('approval_required'); // not stored yet: not announced
  storage.hold = false;
  storage.held[0]!();
  await until(() => events(out.frames, 1).includes('approval_required'));
  expect(storage.waiting.size).toBe(1);
  return out.frames[0]!.value.stream.start.run_id as string;
}

function ask(s: TurnScheduler, type: 'get_run' | 'approve_tool', runId: string, req: number, approve?: boolean): void {
  s.handle({ type, conn: 2, req, runId, afterSeq: 0, onlyPair: null, callId: 'call_1_1', approve, reason: null });
}

describe('a run waiting for approval, stored', () => {
  it('is announced only once stored, and a new scheduler on the store resumes it: waiting, then approved, stored once', async () => {
    const storage = new HeldSaves();
    const runId = await waiting(storage);
    const row = JSON.parse(storage.waiting.get(runId)!.state) as StoredWaitingRun;
    expect(row.waits).toMatchObject([{ call_id: 'call_1_1', tool: 'probe', arguments: '{}' }]);
    expect(row.loop.step?.calls.map((c) => c.name)).toEqual(['probe']);

    const { out, s } = scheduler(storage); // the restarted daemon
    await s.restoreWaiting(() => true);
    ask(s, 'get_run', runId, 1);
    await until(() => out.frames.some((f) => f.req === 1));
    expect(out.frames.find((f) => f.req === 1)!.value.run).toMatchObject({ run_id: runId, status: 'waiting', pending_approvals: [{ call_id: 'call_1_1' }] });
    ask(s, 'approve_tool', runId, 2, true);
    await until(() => storage.calls.includes('writeTurns'));
    expect(storage.waiting.size).toBe(0);
    const stored = await storage.allMessages(1);
    expect(stored.map((m) => `${m.role}: ${m.content}`)).toEqual(['user: /call probe {}', 'assistant: ', 'tool: ran', 'assistant: ran']);
  });

  it('stores a message steered in while it waits, and a resumed run takes it after the tool step', async () => {
    const storage = new HeldSaves();
    const { out, s: first } = scheduler(storage);
    first.handle(turnRequest({ conn: 1, req: 1, mode: 'stream', agent: 'a', sender: 's', content: '/call probe {}', detach: true }));
    await until(() => events(out.frames, 1).includes('approval_required'));
    const runId = out.frames[0]!.value.stream.start.run_id as string;
    first.handle({ type: 'steer', conn: 2, req: 5, agent: 'a', sender: 's', content: 'and then this' });
    await until(() => out.frames.some((f) => f.req === 5));
    expect((JSON.parse(storage.waiting.get(runId)!.state) as StoredWaitingRun).steers).toEqual(['and then this']);

    const { s } = scheduler(storage); // the restarted daemon
    await s.restoreWaiting(() => true);
    ask(s, 'approve_tool', runId, 2, true);
    await until(() => storage.calls.includes('writeTurns'));
    expect((await storage.allMessages(1)).map((m) => `${m.role}: ${m.content}`)).toEqual([
      'user: /call probe {}', 'assistant: ', 'tool: ran', 'user: and then this', 'assistant: and then this',
    ]);
  });

  it('whose deadline passed while no one served it is denied "approval timed out" when resumed', async () => {
    const storage = new HeldSaves();
    const runId = await waiting(storage);
    const rec = storage.waiting.get(runId)!;
    const state = JSON.parse(rec.state) as StoredWaitingRun;
    state.waits[0]!.deadline = Date.now() - 1;
    storage.waiting.set(runId, { ...rec, state: JSON.stringify(state) });
    const { s } = scheduler(storage);
    await s.restoreWaiting(() => true);
    await until(() => storage.calls.includes('writeTurns'));
    expect((await storage.allMessages(1)).map((m) => m.content)).toEqual(['/call probe {}', '', 'approval timed out', 'approval timed out']);
    expect(storage.waiting.size).toBe(0);
  });

  it('a run of an agent deleted while no one served it ends failed and leaves the store', async () => {
    const storage = new HeldSaves();
    const runId = await waiting(storage);
    const rec = storage.waiting.get(runId)!;
    const gone = rec.runId.replace(/-(\w+)$/, '-gone');
    storage.waiting.set(gone, { ...rec, runId: gone, agent: 'deleted' });
    const { out, s } = scheduler(storage);
    await s.restoreWaiting(() => true);
    expect([...storage.waiting.keys()]).toEqual([runId]);
    ask(s, 'get_run', gone, 1);
    await until(() => out.frames.some((f) => f.req === 1));
    expect(out.frames.find((f) => f.req === 1)!.value.run).toMatchObject({ status: 'failed', error: 'agent "deleted" was deleted' });
  });

  it('a resumed run that ends before its loop takes its waits (its tools fail to load) leaves the store', async () => {
    const storage = new HeldSaves();
    const runId = await waiting(storage);
    const out = fakeOutbox();
    const s = new TurnScheduler({
      outbox: out,
      agents: { a: validateAgentConfig({ model: 'echo', approve_tools: ['probe'] }, 'test', 'a') },
      log: createLogger('silent'),
      store: storage,
      memoryConversations: 100,
      models: new Models({}),
      harness: { toolsFor: async () => { throw new Error('no tools today'); } } as unknown as Harness,
    });
    await s.restoreWaiting(() => true);
    await until(() => storage.waiting.size === 0);
    ask(s, 'get_run', runId, 1);
    await until(() => out.frames.some((f) => f.req === 1));
    expect(out.frames.find((f) => f.req === 1)!.value.run).toMatchObject({ status: 'failed', pending_approvals: [] });
  });

  it('a row it cannot read is left in the store; the others resume', async () => {
    const storage = new HeldSaves();
    const runId = await waiting(storage);
    storage.waiting.set('r00000000-bad-1', { runId: 'r00000000-bad-1', agent: 'a', sender: 'x', createdAt: 0, state: '{not json' });
    const { out, s } = scheduler(storage);
    await s.restoreWaiting(() => true);
    ask(s, 'get_run', runId, 1);
    await until(() => out.frames.some((f) => f.req === 1));
    expect(out.frames.find((f) => f.req === 1)!.value.run).toMatchObject({ status: 'waiting' });
    expect(storage.waiting.has('r00000000-bad-1')).toBe(true);
  });
});
