/**
 * The OpenAI-compatible door beside the plain one: the same echo turn as a
 * streaming `chat.completions.create` through the official `openai` client
 * (HTTP keep-alive, server-sent events, `[DONE]`), and as a `stream` on the
 * Unix socket with agentd's own client. Alternating rounds, on one daemon:
 * per-turn latency (p50, p99) one turn at a time, turns per second with 16
 * in flight, and the daemon's CPU per turn. Writes bench/results/openai.md.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import OpenAI from 'openai';
import { AgentdClient } from '../../src/client/index.ts';
import type { BenchContext } from '../lib/context.ts';
import { median, processCpuSeconds, spread } from '../lib/load.ts';
import { startAgentd } from '../lib/processes.ts';

const CONTENT = 'hello there';
const IN_FLIGHT = 16;

interface Door {
  name: string;
  /** One streamed turn for `sender`, to its end. */
  turn(sender: string): Promise<void>;
}

function openAiDoor(base: string): Door {
  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'none', maxRetries: 0 });
  return {
    name: 'openai chat.completions (stream, HTTP)',
    async turn(sender) {
      const s = await client.chat.completions.create({ model: 'assistant', user: sender, stream: true, messages: [{ role: 'user', content: CONTENT }] });
      let text = '';
      for await (const c of s) text += c.choices[0]?.delta.content ?? '';
      if (text !== CONTENT) throw new Error(`openai turn answered ${JSON.stringify(text)}`);
    },
  };
}

function socketDoor(c: AgentdClient): Door {
  return {
    name: 'agentd stream (Unix socket)',
    async turn(sender) {
      let text = '';
      for await (const ev of c.stream('assistant', CONTENT, { sender })) if (ev.type === 'chunk') text += ev.content;
      if (text !== CONTENT) throw new Error(`socket turn answered ${JSON.stringify(text)}`);
    },
  };
}

const percentile = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
};

/** One round of a door: n sequential turns (latencies), then n turns 16 at a time (rate, daemon CPU). */
async function round(door: Door, pid: number, n: number, r: number): Promise<{ p50: number; p99: number; rate: number; cpuUs: number }> {
  const lat: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await door.turn(`s${r}-${i % 32}`);
    lat.push(Number(process.hrtime.bigint() - t0) / 1e3);
  }
  const cpu0 = processCpuSeconds(pid);
  const t0 = process.hrtime.bigint();
  let next = 0;
  await Promise.all(Array.from({ length: IN_FLIGHT }, async (_, w) => {
    while (next < n) {
      next++;
      await door.turn(`p${r}-${w}`);
    }
  }));
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  return { p50: percentile(lat, 0.5), p99: percentile(lat, 0.99), rate: n / secs, cpuUs: ((processCpuSeconds(pid) - cpu0) * 1e6) / n };
}

export async function run(ctx: BenchContext): Promise<void> {
  const agentd = await startAgentd(ctx.workers, { assistant: { model: 'echo' } }, { http: '127.0.0.1:0' });
  const c = await AgentdClient.connect({ path: agentd.unix });
  try {
    const port = Number(readFileSync(join(dirname(agentd.unix), 'http.port'), 'utf8').trim());
    const doors = [openAiDoor(`http://127.0.0.1:${port}`), socketDoor(c)];
    const n = ctx.quick ? 300 : 2_000;
    for (const d of doors) for (let i = 0; i < 50; i++) await d.turn(`warm-${i % 8}`);
    const samples = doors.map(() => ({ p50: [] as number[], p99: [] as number[], rate: [] as number[], cpuUs: [] as number[] }));
    for (let r = 0; r < ctx.report.rounds; r++) {
      const order = r % 2 === 0 ? [0, 1] : [1, 0];
      for (const k of order) {
        const m = await round(doors[k]!, agentd.proc.pid!, n, r);
        for (const key of ['p50', 'p99', 'rate', 'cpuUs'] as const) samples[k]![key].push(m[key]);
      }
    }
    const [http, sock] = samples as [typeof samples[0], typeof samples[0]];
    const anchor = doors[1]!.name;
    const rows: [string, string, number[], number[]][] = [
      ['streaming turn latency p50', 'us', http.p50, sock.p50],
      ['streaming turn latency p99', 'us', http.p99, sock.p99],
      [`streaming turns/s, ${IN_FLIGHT} in flight`, 'turns/s', http.rate, sock.rate],
      ['daemon CPU per turn', 'us', http.cpuUs, sock.cpuUs],
    ];
    for (const [name, unit, mine, theirs] of rows) {
      ctx.report.add({ suite: 'openai', name: `${name} (${doors[0]!.name})`, unit, value: median(mine), anchor, anchor_value: median(theirs), spread: spread(mine) });
    }
    writeResults(ctx, rows, doors.map((d) => d.name), n);
  } finally {
    await c.close();
    await agentd.stop();
  }
}

function writeResults(ctx: BenchContext, rows: [string, string, number[], number[]][], names: string[], n: number): void {
  const fmt = (v: number): string => (v >= 100 ? v.toFixed(0) : v.toFixed(1));
  const lines = [
    '# OpenAI-compatible streaming turn beside a plain socket turn',
    '',
    `\`npm run bench -- --suite openai${ctx.quick ? ' --quick' : ''}\` (bench/suites/openai.ts), ${new Date().toISOString()}, ${ctx.workers} workers, ${ctx.report.rounds} alternating rounds of ${n} echo turns per door: medians over rounds.`,
    '',
    `| measure | ${names[0]} | ${names[1]} | ratio |`,
    '|---|---|---|---|',
    ...rows.map(([name, unit, a, b]) => `| ${name} (${unit}) | ${fmt(median(a))} | ${fmt(median(b))} | ${(median(a) / median(b)).toFixed(2)} |`),
    '',
    'Daemon CPU is all its threads (/proc), per turn of the 16-in-flight phase. Both clients run in the bench process on the same machine as the',
    'daemon, so the openai client\'s own cost (one HTTP request and an SSE parse per turn) weighs on the rate; latency and daemon CPU are the door\'s.',
    '',
    `Spread (max−min)/median of the OpenAI rounds: ${rows.map(([name, , a]) => `${name} ${(spread(a) * 100).toFixed(0)}%`).join(', ')}.`,
    '',
  ];
  writeFileSync(resolve(import.meta.dirname, '../results/openai.md'), lines.join('\n'));
}
