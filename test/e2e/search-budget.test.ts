/**
 * A search has a budget and a lane of its own (PROTOCOL §4.3): past
 * search_timeout_ms it ends with 504, its client's disconnect cancels it,
 * other storage work is answered while it runs, and SIGTERM ends the
 * daemon during one. The store is filled before the daemon starts with
 * big messages that all match, so scoring them takes long.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../src/storage/sqlite/db.ts';
import { ConversationStore } from '../../src/storage/sqlite/store.ts';
import { SearchIndex } from '../../src/storage/sqlite/search-index.ts';
import { createWriteLockBuffer, WriteLock } from '../../src/storage/sqlite/write-lock.ts';
import { makeHome, startDaemon, testClient, testDaemon, waitFor, type Daemon } from '../helpers/daemon.ts';
import type { AgentdClient } from '../../src/client/index.ts';

const CONFIG = { agents: { assistant: { model: 'echo' } } };
/** Messages of 1 MiB of matching words: slow to score, quick to write. */
const MESSAGES = 24;
const TEXT = 'pay the toll '.repeat(Math.ceil((1024 * 1024) / 13));

let seeded = '';

/** A home whose store already holds the big, indexed messages. */
function seededHome(config: Record<string, unknown>): string {
  const home = makeHome({ ...CONFIG, ...config });
  copyFileSync(seeded, join(home, 'agentd.db'));
  return home;
}

async function stats(c: AgentdClient): Promise<Record<string, number>> {
  return (await c.request('get_stats', {})).stats as Record<string, number>;
}

/** Starts a search that runs long on its own client; resolves once the daemon counts it in progress. */
async function longSearch(d: Daemon, watcher: AgentdClient): Promise<{ client: AgentdClient; reply: Promise<unknown> }> {
  const client = await d.client();
  const reply = client.request('search_sessions', { query: 'pay' });
  reply.catch(() => {});
  await waitFor(async () => (await stats(watcher)).searches_in_progress === 1, 'the search to start');
  return { client, reply };
}

beforeAll(async () => {
  const first = await startDaemon({ config: CONFIG });
  expect((await first.stop()).code).toBe(0);
  const db = openDatabase(join(first.home, 'agentd.db'));
  const store = new ConversationStore(db, new WriteLock(createWriteLockBuffer(), 1));
  for (let i = 0; i < MESSAGES; i++) store.appendTurn({ dbId: null, agent: 'assistant', sender: `s${i}`, title: '', stored: 0 }, [{ role: 'user', content: TEXT }]);
  new SearchIndex(db).catchUpAll(1);
  db.close();
  seeded = join(mkdtempSync(join(tmpdir(), 'agentd-seed-')), 'agentd.db');
  copyFileSync(join(first.home, 'agentd.db'), seeded);
}, 120_000);

describe('search budget', () => {
  it('a search past search_timeout_ms ends with 504', async () => {
    const d = await testDaemon({ home: seededHome({ search_timeout_ms: 50 }) });
    const c = await testClient(d);
    await expect(c.request('search_sessions', { query: 'pay' })).rejects.toMatchObject({ code: 504 });
    expect(await stats(c)).toMatchObject({ searches_timed_out: 1, searches_in_progress: 0 });
  });

  it('other storage work is answered while a search runs; its disconnect cancels it', async () => {
    const d = await testDaemon({ home: seededHome({ search_timeout_ms: 600_000, storage_threads: 1 }) });
    const c = await testClient(d);
    const search = await longSearch(d, c);
    await c.request('create_agent', { name: 'other', config: { model: 'echo' } });
    const list = (await c.request('list_conversations', {})).conversation_list as { conversations: unknown[] };
    expect(list.conversations).toHaveLength(MESSAGES);
    search.client.close();
    await waitFor(async () => (await stats(c)).searches_cancelled === 1, 'the search to be cancelled');
    expect((await stats(c)).searches_in_progress).toBe(0);
    // The search thread is free again: a small search is answered.
    await expect(c.request('search_sessions', { query: 'toll', limit: 1, context_before: 0, context_after: 0 })).resolves.toBeDefined();
  }, 60_000);

  it('SIGTERM during a search ends the daemon', async () => {
    const d = await startDaemon({ home: seededHome({ search_timeout_ms: 600_000, shutdown_grace_ms: 100 }) });
    const c = await d.client();
    const search = await longSearch(d, c);
    // Generous: the bound is shutdown_grace_ms plus the teardown's few seconds, far under the search's own budget.
    expect((await d.stop()).code).toBe(0);
    await expect(search.reply).rejects.toBeDefined();
    c.close();
    search.client.close();
  }, 60_000);
});
