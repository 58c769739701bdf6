/**
 * The HTTP door beside the socket protocol: a one-word echo turn over HTTP
 * (`POST …/turns`, answered as `send`) beside the same turn as a `send`
 * frame over TCP (latency p50/p99 with one in flight, turns/s with 16
 * clients, the daemon's CPU per turn); and `GET /v1/ping` beside a minimal
 * node:http server answering `{}` (bench/http-floor.mjs), as a ratio.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { frameClient, type BenchClient } from '../lib/clients.ts';
import type { BenchContext } from '../lib/context.ts';
import { httpClient } from '../lib/http-client.ts';
import { latency, processCpuSeconds, throughputDetail } from '../lib/load.ts';
import { startAgentd, startHttpFloor } from '../lib/processes.ts';
import { Report } from '../lib/report.ts';

const CLIENTS = 16;

interface Side {
  name: string;
  make: () => Promise<BenchClient>;
}

/** p50 and p99 (µs) with one request in flight, then the rate with CLIENTS clients and the daemon's CPU per request (µs). */
async function measure(ctx: BenchContext, side: Side, pid: number, n: number): Promise<number[]> {
  const one = await side.make();
  const l = await latency(one, n, Math.min(200, n / 4));
  one.close();
  const clients = await Promise.all(Array.from({ length: CLIENTS }, () => side.make()));
  const d = await throughputDetail(clients, 1, ctx.sizes.rateMs, ctx.sizes.warmupMs, () => processCpuSeconds(pid));
  for (const c of clients) c.close();
  return [l.p50, l.p99, d.rate, d.window.count === 0 ? 0 : (d.window.probe * 1e6) / d.window.count];
}

export async function run(ctx: BenchContext): Promise<void> {
  Report.progress('http: starting agentd with the HTTP listener, and the HTTP floor');
  const agentd = await startAgentd(ctx.workers, { assistant: { model: 'echo' } }, { http: '127.0.0.1:0' });
  const floor = await startHttpFloor();
  try {
    const port = readFileSync(join(dirname(dirname(agentd.unix)), 'run', 'http.port'), 'utf8').trim();
    const base = `http://127.0.0.1:${port}`;
    const pid = agentd.proc.pid!;
    const sender = (slot: string, i: number): string => `${slot}-${i % 64}-${Math.floor(i / 6400)}`;
    const slot = (): string => Math.random().toString(36).slice(2, 8);
    const turns: Side[] = [
      {
        name: 'http',
        make: async () => {
          const s = slot();
          return httpClient(base, { method: 'POST', path: (i) => `/v1/agents/assistant/conversations/${sender(s, i)}/turns`, body: () => ({ content: 'hello' }) });
        },
      },
      {
        name: 'socket (tcp)',
        make: () => {
          const s = slot();
          return frameClient(agentd.tcp!, (i) => ({ send: { agent: 'assistant', content: 'hello', sender: sender(s, i) } }));
        },
      },
    ];
    // A quarter of the latency suite's samples: p99 still rests on dozens of them, and an HTTP round trip costs several pings.
    const n = Math.max(500, ctx.sizes.latencyN / 4);
    await ctx.report.compare(
      'http',
      [
        { name: 'one-word turn p50', unit: 'us' },
        { name: 'one-word turn p99', unit: 'us' },
        { name: `turns/s, ${CLIENTS} clients`, unit: '/s' },
        { name: 'daemon CPU per turn', unit: 'us' },
      ],
      turns,
      (side) => measure(ctx, side, pid, n),
    );
    const pings: Side[] = [
      { name: 'agentd GET /v1/ping', make: async () => httpClient(base, { method: 'GET', path: () => '/v1/ping', body: null }) },
      { name: 'node:http floor', make: async () => httpClient(floor.base, { method: 'GET', path: () => '/v1/ping', body: null }) },
    ];
    await ctx.report.compare(
      'http',
      [
        { name: 'ping p50', unit: 'us' },
        { name: 'ping p99', unit: 'us' },
        { name: `pings/s, ${CLIENTS} clients`, unit: '/s' },
        { name: 'server CPU per ping', unit: 'us' },
      ],
      pings,
      (side) => measure(ctx, side, side.name === 'node:http floor' ? floor.proc.pid! : pid, n),
    );
  } finally {
    await Promise.all([agentd.stop(), floor.stop()]);
  }
}
