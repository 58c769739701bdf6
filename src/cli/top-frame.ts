/**
 * One frame of `agentctl top`: a `get_dashboard` snapshot as text lines,
 * cut to the terminal's width and height (the busiest rows first, so a short
 * terminal loses the least interesting ones).
 */
import type { Dashboard } from '../shared/wire/dashboard.ts';
import type { Style } from './output.ts';
import { clip, duration } from './output.ts';

const SPARK = '▁▂▃▄▅▆▇█';

function ms(v: number): string {
  if (v === 0) return '-';
  if (v < 10) return `${v.toFixed(2)} ms`;
  if (v < 1000) return `${v.toFixed(0)} ms`;
  return `${(v / 1000).toFixed(1)} s`;
}

/** Turns per second over the last `width` seconds, as one line of bars. */
function sparkline(d: Dashboard, width: number): string {
  const last = d.series.slice(-width);
  const max = Math.max(1, ...last.map((s) => s.turns));
  return last.map((s) => (s.turns === 0 ? ' ' : SPARK[Math.min(SPARK.length - 1, Math.floor((s.turns / max) * (SPARK.length - 1)))])).join('');
}

/** Rows as aligned columns, the last one unpadded. */
function columns(rows: string[][]): string[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd());
}

function section(title: string, header: string[], rows: string[][], empty: string, style: Style): string[] {
  if (rows.length === 0) return ['', style.bold(title), `  ${empty}`];
  const [head, ...body] = columns([header, ...rows]);
  return ['', style.bold(title), style.dim(`  ${head}`), ...body.map((l) => `  ${l}`)];
}

export function renderTop(d: Dashboard, style: Style, width = 100): string[] {
  const where = d.cluster === null ? `${d.workers} shards` : `node ${d.cluster.node} of cluster ${d.cluster.name}`;
  const lines = [
    style.bold(`agentd ${d.version}, ${where}, up ${duration(d.uptime_secs)}  ${d.time.slice(11, 19)} UTC`),
    `turns/s ${d.turns_per_sec.toFixed(1)}   p50 ${ms(d.p50_ms)}   p99 ${ms(d.p99_ms)}   turns ${d.turns_total}   failed ${d.errors_total > 0 ? style.red(String(d.errors_total)) : '0'}   in memory ${d.conversations_in_memory}   connections ${d.connections}`,
    `last ${Math.min(width - 12, d.series.length)} s  ${style.cyan(sparkline(d, Math.min(width - 12, d.series.length)))}`,
    ...section('SHARDS', ['SHARD', 'RUNNING', 'QUEUED'], d.shards.map((s) => [String(s.shard), String(s.running), String(s.queued)]), 'none', style),
    ...section('AGENTS', ['AGENT', 'MODEL', 'TURNS', 'FAILED', 'MCP'], d.agents.map((a) => [a.name, a.model, String(a.turns), String(a.errors), String(a.mcps)]), 'none', style),
    ...section('BUSIEST CONVERSATIONS', ['AGENT', 'SENDER', 'STATE', 'QUEUED', 'MESSAGES', 'TITLE'],
      d.conversations.map((c) => [c.agent, c.sender, c.running ? 'running' : 'idle', String(c.queued), String(c.message_count), clip(c.title, 40)]), 'no conversation in memory', style),
    ...section('RECENT ERRORS (failed turns, warnings)', ['TIME', 'AGENT', 'SENDER', 'CODE', 'MESSAGE'],
      d.errors.slice(0, 10).map((e) => [e.time.slice(11, 19), e.agent, e.sender, e.code, clip(e.message, 80)]), 'none', style),
    ...section('MCP SERVERS', ['AGENT', 'SERVER', 'TRANSPORT', 'STATUS', 'TOOLS', 'ERROR'],
      d.mcps.map((m) => [m.agent, m.name, m.transport, m.status, String(m.tool_count), clip(m.error, 60)]), 'none', style),
  ];
  if (d.cluster !== null) {
    const c = d.cluster;
    lines.push(...section(`CLUSTER ${c.name}: ${c.live_nodes.length} live of ${c.nodes.length} nodes, ${c.partitions} partitions, ${c.unowned_partitions} unowned`, ['NODE', 'LIVE', 'PARTITIONS', 'LEASE AGE'],
      c.nodes.map((n) => [n.node === c.node ? `${n.node} (this)` : n.node, n.live ? 'yes' : 'no', String(n.partitions), `${n.lease_age_ms} ms`]), 'no nodes', style));
  }
  return lines.map((l) => cut(l, width));
}

/** Cuts a line to `width` visible characters, keeping its colour codes whole. */
function cut(line: string, width: number): string {
  let visible = 0;
  let out = '';
  for (let i = 0; i < line.length; i++) {
    if (line[i] === '\x1b') {
      const end = line.indexOf('m', i);
      out += line.slice(i, end + 1);
      i = end;
      continue;
    }
    if (visible >= width) continue;
    out += line[i];
    visible++;
  }
  return out;
}
