/**
 * The rest of the HTTP door's REST routes with real clients (curl, and
 * fetch for streams): kill, compact, steer and tool approvals on running
 * turns, the active model, MCP servers and their event stream, schedules
 * and webhooks (docs/http.md).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, startDaemon, type Daemon } from '../helpers/daemon.ts';
import { bearer, curl, curlJson, httpTarget, readSse, type HttpTarget, type SseEvent } from '../helpers/http.ts';
import { fixtureDir, stdioEntry } from '../helpers/mcp.ts';

let d: Daemon;
let t: HttpTarget;
beforeAll(async () => {
  d = await startDaemon({
    workers: 2,
    config: {
      agents: {
        assistant: { model: 'echo' },
        slow: { model: 'echo', echo: { delay_ms: 5 } },
        guarded: { model: 'echo', approve_tools: ['peers'] },
      },
    },
    args: ['--http', '127.0.0.1:0'],
  });
  t = httpTarget(d);
});
afterAll(() => cleanup(d));

const WORDS = Array.from({ length: 120 }, (_, i) => `w${i}`).join(' ');
const streamTurn = (agent: string, sender: string, content: string, onEvent: (ev: SseEvent) => boolean | void): ReturnType<typeof readSse> =>
  readSse(`${t.base}/v1/agents/${agent}/conversations/${sender}/turns`, { method: 'POST', headers: { ...bearer(t), accept: 'text/event-stream' }, body: JSON.stringify({ content }) }, onEvent);

describe('turns in flight', () => {
  it('steers a running turn, and answers 409 when none runs', async () => {
    expect((await curlJson(t, 'POST', '/v1/agents/slow/conversations/steer-idle/steer', { content: 'x' })).status).toBe(409);
    const seen: SseEvent[] = [];
    let steered: Promise<Awaited<ReturnType<typeof curlJson>>> | null = null;
    await streamTurn('slow', 'steered', WORDS, (ev) => {
      seen.push(ev);
      if (ev.event === 'chunk' && steered === null) steered = curlJson(t, 'POST', '/v1/agents/slow/conversations/steered/steer', { content: 'and then this' });
    });
    const r = await steered!;
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ run_id: seen[0]!.data.run_id });
    expect(seen.find((e) => e.event === 'steered')?.data).toMatchObject({ content: 'and then this' });
    expect(seen.at(-1)!.event).toBe('end');
  });

  it('kills a running turn', async () => {
    const seen: SseEvent[] = [];
    let killed: ReturnType<typeof curl> | null = null;
    await streamTurn('slow', 'killed', WORDS, (ev) => {
      seen.push(ev);
      if (ev.event === 'chunk' && killed === null) killed = curl(t, '/v1/agents/slow/conversations/killed/kill', ['-X', 'POST']);
    });
    expect((await killed!).status).toBe(200);
    expect(seen.at(-1)!.data).toMatchObject({ stop_reason: 'cancelled', error: 'cancelled by kill' });
  });

  it('approves and denies a tool call the run waits on', async () => {
    const seen: SseEvent[] = [];
    let decided: ReturnType<typeof curlJson> | null = null;
    await streamTurn('guarded', 'approvals', '/call peers {}', (ev) => {
      seen.push(ev);
      if (ev.event === 'approval_required') {
        const runId = seen[0]!.data.run_id as string;
        decided = curlJson(t, 'POST', `/v1/runs/${runId}/approvals`, { call_id: ev.data.call_id, approve: false, reason: 'not now' });
      }
    });
    expect((await decided!).status).toBe(200);
    expect(seen.find((e) => e.event === 'tool_result')?.data).toMatchObject({ output: 'denied: not now', is_error: true });
    const runId = seen[0]!.data.run_id as string;
    const again = await curlJson(t, 'POST', `/v1/runs/${runId}/approvals`, { call_id: 'call_1_1', approve: true });
    expect(again.status).toBe(409);
    expect((await curlJson(t, 'POST', `/v1/runs/${runId}/approvals`, { call_id: 'c' })).status).toBe(400);
  });

  it('compacts a conversation', async () => {
    await curlJson(t, 'POST', '/v1/agents/assistant/conversations/compacted/turns', { content: 'something to compact' });
    const r = await curlJson(t, 'POST', '/v1/agents/assistant/conversations/compacted/compact', {});
    expect(r.status).toBe(200);
    expect(typeof (r.json as { summary: string }).summary).toBe('string');
    expect((await curlJson(t, 'POST', '/v1/agents/assistant/conversations/compacted/compact', { prompt: 5 })).status).toBe(400);
  });
});

describe('models, MCP servers', () => {
  it('sets the active model', async () => {
    expect((await curlJson(t, 'PUT', '/v1/models/active', { model: 'echo' })).status).toBe(200);
    expect((await curlJson(t, 'PUT', '/v1/models/active', { model: 'no-such-model' })).status).toBe(404);
  });

  it('adds, reconnects and removes an MCP server, with its events as a stream', async () => {
    const dir = fixtureDir();
    const events: SseEvent[] = [];
    let upserted: ReturnType<typeof curlJson> | null = null;
    await readSse(`${t.base}/v1/mcps/events?agent=assistant`, { headers: bearer(t) }, (ev) => {
      events.push(ev);
      return false; // one event is enough: the stream works
    }, () => {
      upserted = curlJson(t, 'PUT', '/v1/agents/assistant/mcps', { name: 'fx', ...stdioEntry(dir, { eager: true }) });
    });
    expect((await upserted!).status).toBe(200);
    expect(events[0]!.event).toBe('mcp_event');
    expect(events[0]!.data).toMatchObject({ agent: 'assistant', name: 'fx' });
    expect(JSON.stringify((await curl(t, '/v1/mcps?agent=assistant')).json)).toContain('"fx"');
    expect((await curl(t, '/v1/agents/assistant/mcps/fx/reconnect', ['-X', 'POST'])).status).toBe(200);
    expect((await curl(t, '/v1/agents/assistant/mcps/fx', ['-X', 'DELETE'])).status).toBe(200);
    expect((await curl(t, '/v1/agents/assistant/mcps/fx', ['-X', 'DELETE'])).status).toBe(404);
  });
});

describe('schedules and webhooks', () => {
  it('creates, lists and deletes a schedule', async () => {
    const created = await curlJson(t, 'POST', '/v1/schedules', { name: 'hourly', source: 'tick', every_ms: 3_600_000 });
    expect(created.status).toBe(200);
    expect(created.json).toMatchObject({ name: 'hourly', source: 'tick', every_ms: 3_600_000 });
    expect((await curlJson(t, 'POST', '/v1/schedules', { name: 'hourly', source: 'tick', every_ms: 3_600_000 })).status).toBe(409);
    expect(JSON.stringify((await curl(t, '/v1/schedules')).json)).toContain('"hourly"');
    expect((await curl(t, '/v1/schedules/hourly', ['-X', 'DELETE'])).status).toBe(200);
    expect((await curl(t, '/v1/schedules/hourly', ['-X', 'DELETE'])).status).toBe(404);
  });

  it('creates, lists, reads the deliveries of and deletes a webhook', async () => {
    const hook = { name: 'ends', url: 'http://127.0.0.1:9/hook', events: ['turn_end'], secret: '0123456789abcdef0123' };
    const created = await curlJson(t, 'POST', '/v1/webhooks', hook);
    expect(created.status).toBe(200);
    expect(created.json).toMatchObject({ name: 'ends', url: hook.url, events: ['turn_end'] });
    expect(JSON.stringify((await curl(t, '/v1/webhooks')).json)).not.toContain(hook.secret);
    const deliveries = await curl(t, '/v1/webhooks/ends/deliveries?limit=10');
    expect(deliveries.status).toBe(200);
    expect((await curl(t, '/v1/webhooks/ends/deliveries?status=nope')).status).toBe(400);
    expect((await curl(t, '/v1/webhooks/ends', ['-X', 'DELETE'])).status).toBe(200);
    expect((await curl(t, '/v1/webhooks/ends/deliveries')).status).toBe(404);
  });
});
