/**
 * The cost of an MCP tool: a turn that makes one MCP tool call over stdio (the
 * test fixture server, `add`) beside the same turn calling the built-in
 * `skill` tool (a round trip to main's harness host). Turns run one after
 * another on one connection, so the figure is a turn's latency, end to end.
 */
import { resolve } from 'node:path';
import { AgentdClient } from '../../src/client/index.ts';
import type { BenchContext } from '../lib/context.ts';
import { median, spread } from '../lib/load.ts';

const FIXTURE = resolve(import.meta.dirname, '../../test/fixtures/mcp-stdio.mjs');

async function turnsUs(c: AgentdClient, agent: string, content: string, n: number): Promise<number> {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    for await (const ev of c.stream(agent, content, { sender: `b${i % 16}` })) {
      if (ev.type === 'tool_result' && ev.is_error) throw new Error(`bench tool call failed: ${ev.output}`);
    }
  }
  return Number(process.hrtime.bigint() - t0) / 1e3 / n;
}

export async function run(ctx: BenchContext): Promise<void> {
  const agentd = ctx.systems.find((s) => s.name === 'agentd')!.proc;
  const c = await AgentdClient.connect({ path: agentd.unix });
  try {
    await c.request('create_agent', { name: 'mcp-bench', config: { mcps: { fx: { command: process.execPath, args: [FIXTURE], eager: true } } } });
    const mcpTurn = '/call fx__add {"a":1,"b":2}';
    const builtinTurn = '/call skill {}';
    const n = ctx.quick ? 200 : 500;
    await turnsUs(c, 'mcp-bench', mcpTurn, 20); // warm-up: the server is connected and hot
    await turnsUs(c, 'mcp-bench', builtinTurn, 20);
    const mcp: number[] = [];
    const builtin: number[] = [];
    for (let r = 0; r < ctx.report.rounds; r++) {
      mcp.push(await turnsUs(c, 'mcp-bench', mcpTurn, n));
      builtin.push(await turnsUs(c, 'mcp-bench', builtinTurn, n));
    }
    ctx.report.add({
      suite: 'mcp', name: 'turn with one MCP tool call over stdio', unit: 'us', value: median(mcp),
      anchor: 'same turn, built-in tool', anchor_value: median(builtin), spread: spread(mcp),
    });
    await c.request('delete_agent', { name: 'mcp-bench' });
  } finally {
    await c.close();
  }
}
