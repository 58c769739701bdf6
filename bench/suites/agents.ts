/**
 * What creating an agent costs as agents accumulate: `create_agent` on a
 * daemon holding 1,000 agents beside the same on one holding 10, round by
 * round. Shards receive only the agent that changed, so the ratio should
 * stay near 1 (before that, every create resent the whole list to every shard).
 */
import { AgentdClient } from '../../src/client/index.ts';
import type { BenchContext } from '../lib/context.ts';
import { median, spread } from '../lib/load.ts';
import { startAgentd, type Proc } from '../lib/processes.ts';
import { Report } from '../lib/report.ts';

function seeded(count: number): Record<string, unknown> {
  return Object.fromEntries(Array.from({ length: count }, (_, i) => [`seed-${i}`, { model: 'echo', description: `seeded agent ${i}` }]));
}

/** Mean microseconds of one `create_agent`; each created agent is deleted again (untimed), so the count holds. */
async function createUs(d: Proc, n: number): Promise<number> {
  const c = await AgentdClient.connect({ path: d.unix });
  try {
    let total = 0n;
    for (let i = 0; i < n; i++) {
      const t0 = process.hrtime.bigint();
      await c.request('create_agent', { name: `probe-${i}`, config: { model: 'echo', description: 'probe' } });
      total += process.hrtime.bigint() - t0;
      await c.request('delete_agent', { name: `probe-${i}` });
    }
    return Number(total) / 1e3 / n;
  } finally {
    await c.close();
  }
}

export async function run(ctx: BenchContext): Promise<void> {
  const n = ctx.quick ? 100 : 300;
  const limits = { max_agents: 2_000 };
  const few = await startAgentd(ctx.workers, seeded(10), limits);
  const many = await startAgentd(ctx.workers, seeded(1_000), limits);
  try {
    await createUs(few, n / 4); // warm-up
    await createUs(many, n / 4);
    const fewUs: number[] = [];
    const manyUs: number[] = [];
    for (let round = 0; round < ctx.report.rounds; round++) {
      const order = round % 2 === 0 ? ([few, many] as const) : ([many, few] as const);
      for (const d of order) (d === few ? fewUs : manyUs).push(await createUs(d, n));
      Report.progress(`agents: create_agent at 10 and 1,000 agents: round ${round + 1}/${ctx.report.rounds}`);
    }
    ctx.report.add({ suite: 'agents', name: 'create_agent with 1,000 agents', unit: 'us', value: median(manyUs), anchor: 'create_agent with 10 agents', anchor_value: median(fewUs), spread: spread(manyUs) });
  } finally {
    await Promise.all([few.stop(), many.stop()]);
  }
}
