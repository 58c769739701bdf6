/**
 * Memory: the daemon's resident set holding 0, 10,000 and 100,000 idle
 * conversations of one short turn each, and the bytes each conversation costs.
 */
import { frameClient } from '../lib/clients.ts';
import type { BenchContext } from '../lib/context.ts';
import { residentBytes } from '../lib/load.ts';
import { startAgentd } from '../lib/processes.ts';
import { Report } from '../lib/report.ts';

export async function run(ctx: BenchContext): Promise<void> {
  const targets = ctx.quick ? [0, 5_000, 20_000] : [0, 10_000, 100_000];
  const d = await startAgentd(ctx.workers, { assistant: { model: 'echo' } }, { memory_conversations: 1_000_000 });
  try {
    // Each call() makes one new conversation: senders are distinct per client and request.
    const clients = await Promise.all(Array.from({ length: 16 }, (_, k) => frameClient(d.unix, (i) => ({ send: { agent: 'assistant', content: 'hi', sender: `m-${k}-${i}` } }))));
    let made = 0;
    let base = 0;
    for (const n of targets) {
      const per = Math.ceil((n - made) / clients.length);
      await Promise.all(clients.map(async (c) => {
        for (let i = 0; i < per; i++) await c.call();
      }));
      made += per * clients.length;
      await new Promise((r) => setTimeout(r, 500)); // let the heap settle a little
      const rss = residentBytes(d.proc.pid!);
      if (n === 0) base = rss;
      ctx.report.add({ suite: 'memory', name: `resident memory, ${made} idle conversations`, unit: 'MiB', value: rss / 2 ** 20, anchor: made === 0 ? '' : 'no conversations', anchor_value: made === 0 ? null : base / 2 ** 20, spread: 0 });
      if (made > 0) ctx.report.add({ suite: 'memory', name: `bytes per idle conversation at ${made}`, unit: 'bytes', value: (rss - base) / made, anchor: '', anchor_value: null, spread: 0 });
      Report.progress(`memory: ${made} conversations: ${(rss / 2 ** 20).toFixed(0)} MiB`);
    }
    for (const c of clients) c.close();
  } finally {
    await d.stop();
  }
}
