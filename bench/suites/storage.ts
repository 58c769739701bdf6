/**
 * Storage: stored echo turns per second beside the same load with
 * persistence off, and search latency over 100,000 stored messages beside
 * `ping` on the same daemon.
 */
import { join } from 'node:path';
import { frameClient } from '../lib/clients.ts';
import { turnBody, type BenchContext } from '../lib/context.ts';
import { latency, throughput } from '../lib/load.ts';
import { startAgentd } from '../lib/processes.ts';
import { Report } from '../lib/report.ts';
import { prepareDatabaseFile, openDatabase } from '../../src/shared/db.ts';
import { ConversationStore } from '../../src/worker/store.ts';
import { createWriteLockBuffer, WriteLock } from '../../src/shared/write-lock.ts';

const AGENTS = { assistant: { model: 'echo' } };

/** A deterministic word list and generator, so every run searches the same corpus. */
function corpus(seed: number): { words: string[]; next: () => number } {
  let x = seed;
  const next = (): number => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return x / 2 ** 32;
  };
  const syll = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'ze', 'pa', 'go', 'hu'];
  const words: string[] = [];
  for (let i = 0; i < 3000; i++) words.push(Array.from({ length: 2 + Math.floor(next() * 3) }, () => syll[Math.floor(next() * syll.length)]).join(''));
  return { words, next };
}

export async function run(ctx: BenchContext): Promise<void> {
  const { rateMs, warmupMs } = ctx.sizes;
  const stored = await startAgentd(ctx.workers, AGENTS);
  const memory = await startAgentd(ctx.workers, AGENTS, { persist: false });
  try {
    const systems = [{ name: 'agentd', proc: stored }, { name: 'persist off', proc: memory }];
    await ctx.report.compare('storage', [{ name: 'stored echo turns 32x8', unit: 'turns/s' }], systems, async (sys) => {
      const cs = await Promise.all(Array.from({ length: 32 }, (_, i) => frameClient(sys.proc.unix, turnBody(`st${i}`))));
      const r = await throughput(cs, 8, rateMs, warmupMs);
      for (const c of cs) c.close();
      return [r];
    });
  } finally {
    await Promise.all([stored.stop(), memory.stop()]);
  }

  // Search: seed 100,000 messages through the shards' own store code, then query over the socket.
  const MESSAGES = 100_000;
  const seeded = await startAgentd(ctx.workers, AGENTS, {}, (home) => {
    const path = join(home, 'agentd.db');
    prepareDatabaseFile(path);
    const db = openDatabase(path);
    const store = new ConversationStore(db, new WriteLock(createWriteLockBuffer(), 1));
    const { words, next } = corpus(42);
    const sentence = (): string => Array.from({ length: 8 + Math.floor(next() * 20) }, () => words[Math.floor(next() * words.length)]).join(' ');
    const PER_CONVERSATION = 50;
    db.transaction(() => {
      for (let c = 0; c < MESSAGES / PER_CONVERSATION; c++) {
        const messages = Array.from({ length: PER_CONVERSATION }, (_, i) => ({ role: i % 2 ? ('assistant' as const) : ('user' as const), content: sentence() }));
        store.appendTurn({ dbId: null, agent: 'assistant', sender: `seed-${c}`, title: '', stored: 0 }, messages);
      }
    })();
    db.close();
  });
  Report.progress(`storage: seeded ${MESSAGES} messages`);
  try {
    const { words, next } = corpus(7);
    const queries = Array.from({ length: 512 }, () => Array.from({ length: 1 + Math.floor(next() * 2) }, () => words[Math.floor(next() * words.length)]).join(' '));
    let q = 0;
    const systems = [{ name: 'agentd', proc: seeded }, { name: 'ping (same daemon)', proc: seeded }];
    await ctx.report.compare(
      'storage',
      ['p50', 'p99'].map((p) => ({ name: `search_sessions over ${MESSAGES / 1000}k messages ${p}`, unit: 'us' })),
      systems,
      async (sys) => {
        const body = sys.name === 'agentd' ? () => ({ search_sessions: { query: queries[q++ % queries.length] } }) : () => ({ ping: {} });
        const c = await frameClient(seeded.unix, body);
        const r = await latency(c, ctx.quick ? 200 : 1000, 20);
        c.close();
        return [r.p50, r.p99];
      },
    );
  } finally {
    await seeded.stop();
  }
}
