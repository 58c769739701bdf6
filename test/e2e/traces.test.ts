/** OpenTelemetry traces over OTLP/HTTP: a turn's span with its hop, model call, tool call and commit, to a real receiver. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, collect, startDaemon, testClient, waitFor, type Daemon } from '../helpers/daemon.ts';
import { callTool, stdioEntry } from '../helpers/mcp.ts';
import { end } from '../helpers/events.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.ts';

let otlp: OtlpReceiver;
let d: Daemon;
const notesDir = mkdtempSync(join(tmpdir(), 'agentd-mcp-'));
beforeAll(async () => {
  otlp = await startOtlpReceiver();
  d = await startDaemon({
    workers: 2,
    // The SDK's batch delay, shortened so spans arrive while the test waits (the default is 5 s).
    env: { OTEL_BSP_SCHEDULE_DELAY: '50' },
    config: { otlp: otlp.url, agents: { tooled: { model: 'echo', mcps: { fx: stdioEntry(notesDir) } } } },
  });
}, 60_000);
afterAll(async () => {
  await cleanup(d);
  await otlp.close();
  rmSync(notesDir, { recursive: true, force: true });
});

const turnSpan = (agent: string): ReceivedSpan | undefined => otlp.spans.find((s) => s.name === `invoke_agent ${agent}`);

describe('traces', { timeout: 60_000 }, () => {
  it('exports a turn span whose children are its shard hop, model calls, tool call and commit', async () => {
    const c = await testClient(d);
    const { evs, result } = await callTool(c, 'tooled', 'fx__echo', { text: 'traced' }, 't1');
    expect(result.is_error).toBe(false);
    expect(end(evs).stop_reason).toBe('text');
    await waitFor(() => turnSpan('tooled') !== undefined, 'the turn span to reach the receiver');
    const turn = turnSpan('tooled')!;
    expect(turn.parentSpanId).toBe('');
    expect(turn.attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'tooled', 'agentd.outcome': 'text' });
    expect(turn.resource).toMatchObject({ 'service.name': 'agentd' });
    const children = otlp.spans.filter((s) => s.parentSpanId === turn.spanId);
    for (const s of children) expect(s.traceId).toBe(turn.traceId);
    const names = children.map((s) => s.name).sort();
    // The echo model is called twice: once asking for the tool, once answering with its result.
    expect(names).toEqual(['chat echo', 'chat echo', 'commit', 'execute_tool fx__echo', 'shard hop']);
    const chat = children.find((s) => s.name === 'chat echo')!;
    expect(chat.attributes).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'echo', 'gen_ai.provider.name': 'echo' });
    expect(typeof chat.attributes['gen_ai.usage.input_tokens']).toBe('number');
    expect(typeof chat.attributes['gen_ai.usage.output_tokens']).toBe('number');
    const tool = children.find((s) => s.name === 'execute_tool fx__echo')!;
    expect(tool.attributes).toMatchObject({ 'gen_ai.tool.name': 'fx__echo', 'agentd.mcp.server': 'fx', 'agentd.tool.kind': 'mcp' });
    // Every child lies within the turn, and the hop comes first.
    for (const s of children) {
      expect(s.start).toBeGreaterThanOrEqual(turn.start);
      expect(s.end).toBeLessThanOrEqual(turn.end);
    }
    const hop = children.find((s) => s.name === 'shard hop')!;
    expect(hop.end).toBeLessThanOrEqual(chat.start);
    expect(otlp.rejected).toBe(0);
    c.close();
  });

  it('marks a failed tool call as an error', async () => {
    const c = await testClient(d);
    expect(end(await collect(c.stream('tooled', '/call fx__fail {"message":"no"}', { sender: 't2' }))).stop_reason).toBe('text');
    await waitFor(() => otlp.spans.some((s) => s.name === 'execute_tool fx__fail'), 'the failed tool call span');
    expect(otlp.spans.find((s) => s.name === 'execute_tool fx__fail')!.status).toMatchObject({ code: 2 });
    c.close();
  });

  it('refuses an otlp setting that is not an http(s) URL, with a clear error', async () => {
    await expect(startDaemon({ workers: 1, config: { otlp: 'collector:4318' } })).rejects.toThrow(/otlp.*must be "off" or the http\(s\) URL of an OTLP\/HTTP traces endpoint/);
  });
});
