/**
 * Where a stored echo turn's time goes, measured in-process so nothing else
 * competes: the shard's own work for one one-word turn (TurnScheduler, agent
 * loop, echo, six encoded frames, no storage), committing one turn's
 * messages through the store beside the same rows through plain statements,
 * and indexing them for search afterwards in batches (search-index.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Outbox } from '../../src/shard/outbox.ts';
import { TurnScheduler } from '../../src/shard/turn-scheduler.ts';
import { Models } from '../../src/models/index.ts';
import { NO_TOOLS } from '../../src/shard/tools/tools.ts';
import { ConversationStore } from '../../src/storage/sqlite/store.ts';
import { SearchIndex } from '../../src/storage/sqlite/search-index.ts';
import type { Harness } from '../../src/shard/tools/harness.ts';
import { validateAgentConfig } from '../../src/shared/config-checks.ts';
import { createLogger } from '../../src/shared/log.ts';
import { INDEX_BATCH, openDatabase, prepareDatabaseFile } from '../../src/storage/sqlite/db.ts';
import { createWriteLockBuffer, WriteLock } from '../../src/storage/sqlite/write-lock.ts';
import type { TurnRequest } from '../../src/shared/threads/shard-messages.ts';
import type { BenchContext } from '../lib/context.ts';
import { median, spread } from '../lib/load.ts';

async function shardTurnUs(n: number): Promise<number> {
  let finished: (() => void) | null = null;
  const outbox = new Outbox((batch) => {
    if (batch.done.length > 0 && finished !== null) finished();
  });
  const harness = { toolsFor: async () => NO_TOOLS } as unknown as Harness;
  const scheduler = new TurnScheduler({
    outbox,
    agents: { assistant: validateAgentConfig({}, 'bench', 'assistant') },
    log: createLogger('silent'),
    store: null,
    memoryConversations: 1_000_000,
    models: new Models({}),
    harness,
  });
  const turn = (i: number): TurnRequest => ({
    type: 'turn', conn: 1, req: i, mode: 'stream', agent: 'assistant', sender: `s${Math.floor(i / 100)}`, content: 'hello',
    guest: null, ephemeral: false, correlationId: null, onBusy: 'enqueue', toolChoice: null, depth: 0, seq: i + 1, turnId: null, chain: 0, detach: false,
  });
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const done = new Promise<void>((r) => (finished = r));
    scheduler.handle(turn(i));
    await done;
  }
  return Number(process.hrtime.bigint() - t0) / 1e3 / n;
}

/** µs per turn: committing `n` turns (through the store, or plain statements), then (`index`) indexing them in batches. */
function commitUs(n: number, through: 'store' | 'plain' | 'index'): number {
  const dir = mkdtempSync(join(tmpdir(), 'agentd-costs-'));
  const path = join(dir, 'agentd.db');
  prepareDatabaseFile(path);
  const db = openDatabase(path);
  try {
    const store = new ConversationStore(db, new WriteLock(createWriteLockBuffer(), 1));
    const convs = Array.from({ length: 100 }, (_, i) => ({ dbId: null as number | null, agent: 'a', sender: `s${i}`, title: '', stored: 0 }));
    const messages = [{ role: 'user' as const, content: 'hello' }, { role: 'assistant' as const, content: 'hello' }];
    // Without the index: the same rows through plain statements, one transaction per turn.
    const insert = db.prepare('INSERT INTO messages (conversation_id, idx, role, content, created_at) VALUES (?, ?, ?, ?, ?)');
    const touch = db.prepare('UPDATE conversations SET updated_at = ?, message_count = ? WHERE id = ?');
    const plain = db.transaction((c: (typeof convs)[number]) => {
      for (const m of messages) insert.run(c.dbId, c.stored++, m.role, m.content, 'now');
      touch.run('now', c.stored, c.dbId);
    });
    for (const c of convs) {
      c.dbId = store.appendTurn(c, messages);
      c.stored += 2;
    }
    const index = new SearchIndex(db);
    index.catchUpAll(INDEX_BATCH);
    let t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) {
      const c = convs[i % convs.length]!;
      if (through === 'plain') plain(c);
      else {
        store.writeTurns([{ conv: c, messages }]);
        c.stored += 2;
      }
    }
    if (through === 'index') {
      t0 = process.hrtime.bigint();
      index.catchUpAll(INDEX_BATCH);
    }
    return Number(process.hrtime.bigint() - t0) / 1e3 / n;
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(ctx: BenchContext): Promise<void> {
  const n = ctx.quick ? 2_000 : 10_000;
  const shard: number[] = [];
  const stored: number[] = [];
  const bare: number[] = [];
  const indexed: number[] = [];
  await shardTurnUs(n); // warm-up
  for (let r = 0; r < ctx.report.rounds; r++) {
    shard.push(await shardTurnUs(n));
    stored.push(commitUs(n / 4, 'store'));
    bare.push(commitUs(n / 4, 'plain'));
    indexed.push(commitUs(n / 4, 'index'));
  }
  ctx.report.add({ suite: 'costs', name: 'shard work for one one-word echo turn (in-process, no storage)', unit: 'us', value: median(shard), anchor: '', anchor_value: null, spread: spread(shard) });
  ctx.report.add({ suite: 'costs', name: 'commit of one turn alone (messages only, indexed for search afterwards)', unit: 'us', value: median(stored), anchor: 'same rows, plain statements', anchor_value: median(bare), spread: spread(stored) });
  ctx.report.add({ suite: 'costs', name: `indexing one turn for search afterwards, batches of ${INDEX_BATCH}`, unit: 'us', value: median(indexed), anchor: 'its commit', anchor_value: median(stored), spread: spread(indexed) });
}
