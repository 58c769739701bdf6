/**
 * The HTTP door's streams (docs/http.md): a turn as server-sent events, one
 * event per stream frame with `id:` its seq; a detached run resumed with
 * `Last-Event-ID` through join_run with no gap and no duplicate; a client
 * that goes away cancels a plain turn; the agent event stream.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, startDaemon, testDaemon, waitFor, type Daemon } from '../helpers/daemon.ts';
import { bearer, curl, curlJson, httpTarget, readSse, sseEvents, type HttpTarget, type SseEvent } from '../helpers/http.ts';

let d: Daemon;
let t: HttpTarget;
beforeAll(async () => {
  d = await startDaemon({
    workers: 2,
    config: { agents: { assistant: { model: 'echo' }, slow: { model: 'echo', echo: { delay_ms: 5 } } } },
    args: ['--http', '127.0.0.1:0'],
  });
  t = httpTarget(d);
});
afterAll(() => cleanup(d));

const WORDS = Array.from({ length: 120 }, (_, i) => `w${i}`).join(' ');
const turnUrl = (agent: string, sender: string): string => `${t.base}/v1/agents/${agent}/conversations/${sender}/turns`;
const post = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: { ...bearer(t), 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});
const textOf = (evs: readonly SseEvent[]): string => evs.filter((e) => e.event === 'chunk').map((e) => e.data.content as string).join('');

describe('a turn as server-sent events', () => {
  it('sends one event per frame, id = seq from 1 with no gap, start to end', async () => {
    const r = await sseEvents(turnUrl('assistant', 'sse-1'), post({ content: 'hello there' }, { accept: 'text/event-stream' }));
    expect(r.status).toBe(200);
    const names = r.events.map((e) => e.event);
    expect(names[0]).toBe('start');
    expect(names.at(-1)).toBe('end');
    expect(names).toContain('chunk');
    expect(r.events.map((e) => e.id)).toEqual(r.events.map((_, i) => i + 1));
    expect(r.events.map((e) => e.data.seq)).toEqual(r.events.map((_, i) => i + 1));
    expect(textOf(r.events)).toBe('hello there');
    expect(r.events.at(-1)!.data).toMatchObject({ error: '', stop_reason: 'text', model: 'echo' });
    expect(r.events[0]!.data.run_id).toMatch(/^r/);
  });

  it('streams when the body asks ("stream": true)', async () => {
    const r = await sseEvents(turnUrl('assistant', 'sse-2'), post({ content: 'by body', stream: true }));
    expect(r.status).toBe(200);
    expect(textOf(r.events)).toBe('by body');
  });

  it('answers an error before start as JSON with its status', async () => {
    const r = await sseEvents(turnUrl('nobody', 'sse-3'), post({ content: 'x', stream: true }));
    expect(r.status).toBe(404);
    expect(JSON.parse(r.body)).toEqual({ error: { code: 404, message: 'unknown agent "nobody"' } });
  });
});

describe('resuming a detached run with Last-Event-ID', () => {
  it('picks up after the last id seen, with no gap and no duplicate, to end', async () => {
    const reference = textOf((await sseEvents(turnUrl('slow', 'ref'), post({ content: WORDS, stream: true }))).events);
    const first: SseEvent[] = [];
    // Read until the 10th chunk, then go away: the run is detached and goes on.
    await readSse(turnUrl('slow', 'resume'), post({ content: WORDS, stream: true, detach: true }), (ev) => {
      first.push(ev);
      return first.filter((e) => e.event === 'chunk').length < 10;
    });
    const runId = first[0]!.data.run_id as string;
    const lastId = first.at(-1)!.id!;
    const rest = await sseEvents(`${t.base}/v1/runs/${runId}/events`, { headers: { ...bearer(t), 'last-event-id': String(lastId) } });
    expect(rest.status).toBe(200);
    expect(rest.events.at(-1)!.event).toBe('end');
    const ids = [...first, ...rest.events].map((e) => e.id!);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(rest.events[0]!.id!).toBeGreaterThan(lastId);
    expect(textOf(first) + textOf(rest.events)).toBe(reference);
    // after_seq does the same for a client without the header; a join from 0 replays the whole run.
    const again = await sseEvents(`${t.base}/v1/runs/${runId}/events?after_seq=0`, { headers: bearer(t) });
    expect(textOf(again.events)).toBe(reference);
  });

  it('refuses a bad Last-Event-ID with 400, an unknown run 404, a plain run 409', async () => {
    const plain = (await curlJson(t, 'POST', '/v1/agents/assistant/conversations/plain/turns', { content: 'not detached' })).json as { run_id: string };
    const bad = await curl(t, `/v1/runs/${plain.run_id}/events`, ['-H', 'Last-Event-ID: x']);
    expect(bad.status).toBe(400);
    expect((await curl(t, '/v1/runs/r00000000-0-1/events')).status).toBe(404);
    const notDetached = await curl(t, `/v1/runs/${plain.run_id}/events`);
    expect(notDetached.status).toBe(409);
    expect(notDetached.body).toContain('is not detached');
  });
});

describe('a client that goes away', () => {
  it('cancels its plain turn, as a closed socket does', async () => {
    let runId = '';
    await readSse(turnUrl('slow', 'leaver'), post({ content: WORDS, stream: true }), (ev) => {
      if (ev.event === 'start') runId = ev.data.run_id as string;
      return ev.event !== 'chunk';
    });
    await waitFor(async () => ((await curl(t, `/v1/runs/${runId}`)).json as { status: string }).status !== 'running', 'the run to end');
    expect((await curl(t, `/v1/runs/${runId}`)).json).toMatchObject({ status: 'cancelled', error: 'connection closed' });
    expect((await curl(t, '/v1/ping')).status).toBe(200);
  });
});

describe('the agent event stream', () => {
  it('streams agent events as server-sent events until the client leaves', async () => {
    const seen: SseEvent[] = [];
    let turn: Promise<unknown> = Promise.resolve();
    await readSse(`${t.base}/v1/events?agent=assistant`, { headers: bearer(t) }, (ev) => {
      seen.push(ev);
      return !(ev.data.kind === 'done' && ev.data.sender === 'observed');
    }, () => {
      // The headers come once the subscription is in place: a turn now is seen.
      turn = curlJson(t, 'POST', '/v1/agents/assistant/conversations/observed/turns', { content: 'watch me' });
    });
    await turn;
    expect(seen.every((e) => e.event === 'agent_event')).toBe(true);
    expect(seen.at(-1)!.data).toMatchObject({ agent: 'assistant', sender: 'observed', kind: 'done', content: 'watch me' });
    await waitFor(async () => ((await curl(t, '/v1/stats')).json as { observers: number }).observers === 0, 'the observer to go');
  });

  it('refuses an unknown agent with 404 before any event', async () => {
    const r = await curl(t, '/v1/events?agent=nobody');
    expect(r.status).toBe(404);
  });
});

describe('shutdown', () => {
  it('ends an open event stream with `closed` and exits cleanly', async () => {
    const own = await testDaemon({ args: ['--http', '127.0.0.1:0'] });
    const ot = httpTarget(own);
    const seen: SseEvent[] = [];
    let stopped: ReturnType<Daemon['stop']> | null = null;
    await readSse(`${ot.base}/v1/events`, { headers: bearer(ot) }, (ev) => void seen.push(ev), () => {
      stopped = own.stop('SIGTERM');
    });
    expect(seen.map((e) => e.event)).toEqual(['closed']);
    expect(await stopped!).toEqual({ code: 0, signal: null });
  });
});
