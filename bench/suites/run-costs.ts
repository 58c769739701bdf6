/**
 * What runs cost a plain `stream` turn: the shard's work for one echo turn
 * (TurnScheduler, agent loop, echo, every frame encoded, no storage),
 * measured in-process so nothing else competes, round by round, alternating:
 *
 * - this checkout, not detached (run id, seq on every frame, the run's record),
 *   beside the same turn on `--baseline DIR` (a checkout of the build before
 *   runs: its sources are imported into this process, so both run side by side);
 * - this checkout, `detach: true` (the rejoin buffer keeps every frame), beside
 *   the same turn not detached.
 *
 * Two sizes: a one-word answer (7 frames) and a 64-word one (70 frames), so
 * per-frame costs show.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BenchContext } from '../lib/context.ts';
import { median, spread } from '../lib/load.ts';

/** The shard's parts a turn needs, loaded from one checkout's sources. */
interface ShardParts {
  Outbox: typeof import('../../src/shard/outbox.ts').Outbox;
  TurnScheduler: typeof import('../../src/shard/turn-scheduler.ts').TurnScheduler;
  Models: typeof import('../../src/models/index.ts').Models;
  NO_TOOLS: typeof import('../../src/shard/tools/tools.ts').NO_TOOLS;
  validateAgentConfig: typeof import('../../src/shared/config-checks.ts').validateAgentConfig;
  createLogger: typeof import('../../src/shared/log.ts').createLogger;
}

async function load(root: string): Promise<ShardParts> {
  const from = (p: string): Promise<Record<string, unknown>> => import(pathToFileURL(join(root, p)).href) as Promise<Record<string, unknown>>;
  const [outbox, scheduler, models, tools, checks, log] = await Promise.all([
    from('src/shard/outbox.ts'), from('src/shard/turn-scheduler.ts'), from('src/models/index.ts'),
    from('src/shard/tools/tools.ts'), from('src/shared/config-checks.ts'), from('src/shared/log.ts'),
  ]);
  return {
    Outbox: outbox.Outbox, TurnScheduler: scheduler.TurnScheduler, Models: models.Models, NO_TOOLS: tools.NO_TOOLS,
    validateAgentConfig: checks.validateAgentConfig, createLogger: log.createLogger,
  } as ShardParts;
}

/**
 * CPU µs (this process, user + system) per stream turn of `content`, `n`
 * turns one after another over 100 pairs: CPU, not wall time, so time spent
 * waiting for a core on a shared machine is not counted.
 */
async function streamTurnUs(parts: ShardParts, n: number, content: string, detach: boolean): Promise<number> {
  let finished: (() => void) | null = null;
  const outbox = new parts.Outbox((batch) => {
    if (batch.done.length > 0 && finished !== null) finished();
  });
  const scheduler = new parts.TurnScheduler({
    outbox,
    agents: { assistant: parts.validateAgentConfig({}, 'bench', 'assistant') },
    log: parts.createLogger('silent'),
    store: null,
    memoryConversations: 1_000_000,
    models: new parts.Models({}),
    harness: { toolsFor: async () => parts.NO_TOOLS } as never,
  });
  const t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const done = new Promise<void>((r) => (finished = r));
    scheduler.handle({
      type: 'turn', conn: 1, req: i, mode: 'stream', agent: 'assistant', sender: `s${i % 100}`, content,
      guest: null, ephemeral: false, correlationId: null, onBusy: 'enqueue', toolChoice: null, depth: 0, seq: i + 1, turnId: null, chain: 0, detach,
    });
    await done;
  }
  const used = process.cpuUsage(t0);
  return (used.user + used.system) / n;
}

const SIZES = [
  { name: 'one-word answer', content: 'hello' },
  { name: '64-word answer', content: Array.from({ length: 64 }, (_, i) => `w${i}`).join(' ') },
] as const;

export async function run(ctx: BenchContext): Promise<void> {
  const n = ctx.quick ? 2_000 : 5_000;
  const mine = await load(join(import.meta.dirname, '../..'));
  const before = ctx.baseline === undefined ? null : await load(ctx.baseline);
  for (const size of SIZES) {
    const plain: number[] = [];
    const detached: number[] = [];
    const baseline: number[] = [];
    // Warm-up: every variant once, so the JIT has seen each path.
    for (const parts of before === null ? [mine] : [mine, before]) await streamTurnUs(parts, n, size.content, false);
    await streamTurnUs(mine, n, size.content, true);
    for (let r = 0; r < ctx.report.rounds; r++) {
      // Alternate the order, so drift in the machine's load falls on every variant.
      const order = r % 2 === 0 ? (['plain', 'detached', 'baseline'] as const) : (['baseline', 'detached', 'plain'] as const);
      for (const which of order) {
        if (which === 'plain') plain.push(await streamTurnUs(mine, n, size.content, false));
        else if (which === 'detached') detached.push(await streamTurnUs(mine, n, size.content, true));
        else if (before !== null) baseline.push(await streamTurnUs(before, n, size.content, false));
      }
    }
    const name = `stream turn, ${size.name}: shard CPU (in-process, no storage)`;
    ctx.report.add({ suite: 'runcost', name: `${name}, run ids + seq`, unit: 'us', value: median(plain), anchor: before === null ? '' : 'baseline (before runs)', anchor_value: before === null ? null : median(baseline), spread: spread(plain) });
    ctx.report.add({ suite: 'runcost', name: `${name}, detach: true (rejoin buffer)`, unit: 'us', value: median(detached), anchor: 'same turn, not detached', anchor_value: median(plain), spread: spread(detached) });
  }
}
