/** PROTOCOL §4.13 runs over real sockets: run ids and seqs, detached runs, join_run, get_run, list_runs, retention. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentdClient, AgentdError, type StreamEvent } from '../../src/client/index.ts';
import { proxy } from '../helpers/socket-proxy.ts';
import { cleanup, collect, startDaemon, testClient, testDaemon, waitFor, type Daemon } from '../helpers/daemon.ts';
import { text, types } from '../helpers/events.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.ts';

let d: Daemon;
// `held` answers its first step only when the test releases it: a run that stays running while the test looks at it.
let api: FakeOpenAI;
beforeAll(async () => {
  api = await startFakeOpenAI(['held']);
  d = await startDaemon({
    workers: 2,
    env: { FAKE_API_KEY: 'Q9-runs-test-key' },
    config: {
      providers: { fake: { type: 'openai', base_url: api.url, api_key_env: 'FAKE_API_KEY' } },
      agents: { assistant: { model: 'echo' }, slow: { model: 'echo', echo: { delay_ms: 5 } }, held: { provider: 'fake', model: 'held' } },
    },
  });
});
afterAll(async () => {
  await cleanup(d);
  await api.close();
});

const client = (): Promise<AgentdClient> => testClient(d);
const WORDS = Array.from({ length: 120 }, (_, i) => `w${i}`).join(' ');
const seqOf = (ev: StreamEvent): number => (ev as { seq: number }).seq;

/** join_run as raw events, ending at LAST. */
function join(c: AgentdClient, runId: string, afterSeq = 0): Promise<StreamEvent[]> {
  return collect(c.joinRun(runId, afterSeq));
}

async function getRun(c: AgentdClient, runId: string): Promise<Record<string, unknown>> {
  return (await c.getRun(runId)) as unknown as Record<string, unknown>;
}

describe('run ids and seqs', () => {
  it('numbers every stream frame 1, 2, 3, … and names the run in start', async () => {
    const c = await client();
    const evs = await collect(c.stream('assistant', 'one two three', { sender: 'seq' }));
    expect(evs.map(seqOf)).toEqual(evs.map((_, i) => i + 1));
    const start = evs[0] as { run_id: string };
    expect(start.run_id).toMatch(/^r[0-9a-f]{8}-[0-9a-z]+-[0-9a-z]+$/);
    const run = await getRun(c, start.run_id);
    expect(run).toMatchObject({ run_id: start.run_id, agent: 'assistant', sender: 'seq', status: 'done', detached: false, stop_reason: 'text', error: '', pending_approvals: [] });
    expect(typeof run.created_at).toBe('string');
    expect(typeof run.ended_at).toBe('string');
  });

  it('puts the run id in send\'s response', async () => {
    const c = await client();
    const r = await c.send('assistant', 'hello', { sender: 'send-run' });
    expect(r.run_id).toMatch(/^r/);
    expect(await getRun(c, r.run_id!)).toMatchObject({ status: 'done', agent: 'assistant', sender: 'send-run' });
  });
});

describe('a detached run', () => {
  it('goes on when its connection closes, and a rejoin from the last seq seen has no gap and no duplicate', async () => {
    const reference = text(await collect((await client()).stream('slow', WORDS, { sender: 'ref' })));
    const first = await d.client();
    const seen: StreamEvent[] = [];
    for await (const ev of first.stream('slow', WORDS, { sender: 'detached', detach: true })) {
      seen.push(ev);
      if (seen.filter((e) => e.type === 'chunk').length === 10) break;
    }
    await first.close();
    const runId = (seen[0] as { run_id: string }).run_id;
    const c = await client();
    const rest = await join(c, runId, seqOf(seen.at(-1)!));
    expect(rest.at(-1)).toMatchObject({ type: 'end', stop_reason: 'text' });
    expect(text([...seen, ...rest])).toBe(reference);
    const seqs = [...seen, ...rest].map(seqOf);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]!).toBeGreaterThan(seqs[i - 1]!);
    expect(await getRun(c, runId)).toMatchObject({ status: 'done', detached: true });
  });

  it('can be joined from the start while it runs, beside its own client', async () => {
    const c = await client();
    const own = c.stream('slow', 'a b c d e f g h', { sender: 'two-watchers', detach: true })[Symbol.asyncIterator]();
    const start = (await own.next()).value as { run_id: string };
    const joined = join(await client(), start.run_id, 0);
    const ownRest: StreamEvent[] = [start as StreamEvent];
    for (let r = await own.next(); !r.done; r = await own.next()) ownRest.push(r.value);
    const other = await joined;
    expect(types(other)[0]).toBe('start');
    expect(text(other)).toBe(text(ownRest));
    expect(other.at(-1)).toEqual(ownRest.at(-1));
  });

  it('can be joined after it ended: every frame after after_seq, ending with end', async () => {
    const c = await client();
    const evs = await collect(c.stream('assistant', 'ended run words', { sender: 'ended', detach: true }));
    const runId = (evs[0] as { run_id: string }).run_id;
    const all = await join(c, runId);
    expect(text(all)).toBe('ended run words');
    expect(all.at(-1)).toEqual(evs.at(-1));
    const tail = await join(c, runId, seqOf(evs.at(-2)!));
    expect(tail).toEqual([evs.at(-1)]);
    // Past the end's own seq the stream still ends with `end`.
    expect(await join(c, runId, seqOf(evs.at(-1)!))).toEqual([evs.at(-1)]);
  });

  it('a send with detach: true can be joined as a stream', async () => {
    const c = await client();
    const r = await c.send('assistant', 'sent detached', { sender: 'send-detached', detach: true });
    const evs = await join(c, r.run_id!);
    expect(text(evs)).toBe('sent detached');
    expect(evs[0]).toMatchObject({ type: 'start', run_id: r.run_id, seq: 1 });
  });
});

describe('the client library', () => {
  it('rejoins a detached stream by itself when its connection drops, from the last seq seen', async () => {
    const reference = text(await collect((await client()).stream('slow', WORDS, { sender: 'ref-client' })));
    const through = await proxy(d.socketPath, d.home);
    const c = await AgentdClient.connect({ path: through.path, reconnect: true });
    const evs: StreamEvent[] = [];
    try {
      for await (const ev of c.stream('slow', WORDS, { sender: 'auto-rejoin', detach: true })) {
        evs.push(ev);
        if (evs.filter((e) => e.type === 'chunk').length === 10 && evs.at(-1)!.type === 'chunk') through.cut();
      }
    } finally {
      await c.close();
    }
    expect(evs.at(-1)).toMatchObject({ type: 'end', stop_reason: 'text' });
    expect(text(evs)).toBe(reference);
    const seqs = evs.map(seqOf);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]!).toBeGreaterThan(seqs[i - 1]!);
  });
});

describe('join_run, get_run and list_runs refuse what they cannot do', () => {
  it('409 for a run that is not detached, 404 for an unknown one, 400 for a malformed id', async () => {
    const c = await client();
    const r = await c.send('assistant', 'attached', { sender: 'refusals' });
    await expect(join(c, r.run_id!)).rejects.toMatchObject({ code: 409 });
    await expect(join(c, 'r00000000-zz-1')).rejects.toMatchObject({ code: 404 });
    await expect(c.getRun('r00000000-zz-1')).rejects.toMatchObject({ code: 404 });
    await expect(c.getRun('nope')).rejects.toMatchObject({ code: 400 });
    await expect(c.listRuns({ status: 'nope' as never })).rejects.toBeInstanceOf(AgentdError);
    await expect(c.listRuns({ limit: 0 })).rejects.toMatchObject({ code: 400 });
  });
});

describe('list_runs', () => {
  it('lists runs newest first, filtered by agent, sender and status', async () => {
    const c = await client();
    const a = await c.send('assistant', 'first', { sender: 'lister' });
    const b = await c.send('assistant', 'second', { sender: 'lister' });
    const runs = await c.listRuns({ agent: 'assistant', sender: 'lister' });
    expect(runs.map((r) => r.run_id)).toEqual([b.run_id, a.run_id]);
    expect(await c.listRuns({ sender: 'lister', limit: 1 })).toHaveLength(1);
    expect(await c.listRuns({ sender: 'lister', status: 'running' })).toEqual([]);
    expect((await c.listRuns({ sender: 'lister', status: 'done' })).length).toBe(2);
  });

  it('shows a running run as running, then done', async () => {
    const c = await client();
    const it = c.stream('held', 'hold on', { sender: 'status', detach: true })[Symbol.asyncIterator]();
    const runId = ((await it.next()).value as { run_id: string }).run_id;
    while ((await it.next()).value?.type !== 'chunk'); // the model call is under way: release() reaches it
    expect(await getRun(c, runId)).toMatchObject({ status: 'running' });
    expect((await c.listRuns({ sender: 'status', status: 'running' })).map((r) => r.run_id)).toEqual([runId]);
    api.release();
    while (!(await it.next()).done);
    expect(await getRun(c, runId)).toMatchObject({ status: 'done' });
  });
});

describe('run retention', () => {
  it('forgets an ended run after run_retention_ms: 404', async () => {
    const td = await testDaemon({ config: { run_retention_ms: 1, agents: { assistant: { model: 'echo' } } } });
    const c = await testClient(td);
    const r = await c.send('assistant', 'gone soon', { detach: true });
    await waitFor(async () => (await c.getRun(r.run_id!).then(() => false, (e: AgentdError) => e.code === 404)), 'the run to be forgotten');
    await expect(join(c, r.run_id!)).rejects.toMatchObject({ code: 404 });
  });
});
