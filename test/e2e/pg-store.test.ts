/**
 * Daemons on a PostgreSQL store (`--store postgres://…`), end to end: two
 * nodes sharing one database, kill -9 losing no acknowledged turn, and a
 * store from a newer agentd refused untouched. Each test has a database of
 * its own; without a server the file fails under CI, and is skipped
 * elsewhere, saying why.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import type { AgentdClient } from '../../src/client/index.ts';
import { PG_SCHEMA_VERSION } from '../../src/storage/postgres/schema.ts';
import { collect, makeHome, runAgentd, startDaemon, testClient, testDaemon, waitFor, type Daemon } from '../helpers/daemon.ts';
import { needPostgres, testDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { startPgProxy } from '../helpers/pg-proxy.ts';

const CONFIG = { agents: { assistant: { model: 'echo' } } };
type History = { title: string; messages: { role: string; content: string }[] };

const skip = await needPostgres();

const onStore = (db: TestDatabase, home?: string): Promise<Daemon> => testDaemon({ config: CONFIG, home, args: ['--store', db.url] });
const history = async (c: AgentdClient, sender: string): Promise<History> =>
  (await c.request('get_conversation_history', { agent: 'assistant', sender })).conversation_history as History;

/** Each test starts two daemons one after the other; on a loaded 2-core machine a start alone can take 20 s. */
const SLOW = 120_000;

describe.skipIf(skip !== null)('daemons on a PostgreSQL store', () => {
  it('two nodes on one database see each other’s conversations: history, list and search', async () => {
    const db = await testDatabase();
    const a = await onStore(db);
    const b = await onStore(db);
    const ca = await testClient(a);
    const cb = await testClient(b);
    await ca.send('assistant', 'the quokka smiles', { sender: 'alice' });
    await cb.send('assistant', 'a wombat digs', { sender: 'bob' });
    expect((await history(cb, 'alice')).messages.map((m) => m.content)).toEqual(['the quokka smiles', 'the quokka smiles']);
    expect((await history(ca, 'bob')).title).toBe('a wombat digs');
    const list = (await cb.request('list_conversations', {})).conversation_list as { conversations: { sender: string }[] };
    expect(list.conversations.map((c) => c.sender).sort()).toEqual(['alice', 'bob']);
    const hits = (await cb.request('search_sessions', { query: 'quokka' })).session_hits as { hits: { sender: string }[] };
    expect(hits.hits.map((h) => h.sender)).toEqual(['alice']);
  }, SLOW);

  it('kill -9 during a load of streamed turns loses no acknowledged turn and stores no partial one', async () => {
    const db = await testDatabase();
    const first = await startDaemon({ config: CONFIG, args: ['--store', db.url] });
    const c1 = await first.client();
    const acked = new Map<string, number>();
    let stop = false;
    const pairs = Array.from({ length: 16 }, (_, p) => `crash-${p}`);
    const loops = pairs.map(async (sender) => {
      for (let t = 0; !stop; t++) {
        try {
          const evs = await collect(c1.stream('assistant', `${sender} turn ${t}`, { sender }));
          if (evs.at(-1)?.type === 'end' && (evs.at(-1) as { stop_reason: string }).stop_reason === 'text') acked.set(sender, t + 1);
        } catch {
          return; // the daemon died under us
        }
      }
    });
    await waitFor(() => [...acked.values()].reduce((x, y) => x + y, 0) > 100, 'some turns to finish', 30_000);
    first.proc.kill('SIGKILL');
    await first.exited;
    stop = true;
    await Promise.all(loops);
    await c1.close();

    const d = await onStore(db, first.home);
    const c = await testClient(d);
    for (const sender of pairs) {
      const n = acked.get(sender) ?? 0;
      const messages = await history(c, sender).then((h) => h.messages, () => []);
      expect(messages.length % 2, sender).toBe(0);
      expect(messages.length / 2, sender).toBeGreaterThanOrEqual(n);
      messages.forEach((m, i) => expect(m).toEqual({ role: i % 2 ? 'assistant' : 'user', content: `${sender} turn ${Math.floor(i / 2)}` }));
    }
  }, SLOW);

  it('a store from a newer agentd is refused at start and left untouched', async () => {
    const db = await testDatabase();
    const d = await onStore(db);
    const c = await testClient(d);
    await c.send('assistant', 'kept as it was', { sender: 's' });
    await d.stop();
    await db.query("INSERT INTO agentd_schema (version, applied_at) VALUES ($1, 'later')", [PG_SCHEMA_VERSION + 1]);
    const before = await db.query('SELECT (SELECT count(*) FROM messages) AS messages, (SELECT max(version) FROM agentd_schema) AS version');
    const r = await runAgentd(['--home', makeHome(CONFIG), '--tcp', 'off', '--store', db.url], {}, 60_000);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(new RegExp(`schema version ${PG_SCHEMA_VERSION + 1}, newer than this agentd understands`));
    expect(await db.query('SELECT (SELECT count(*) FROM messages) AS messages, (SELECT max(version) FROM agentd_schema) AS version')).toEqual(before);
  }, SLOW);

  it('a stopped daemon ends every PostgreSQL session it opened with a goodbye, shards and every storage thread alike', async () => {
    const db = await testDatabase();
    const proxy = await startPgProxy(db.url);
    onTestFinished(() => proxy.close());
    const d = await testDaemon({ config: CONFIG, args: ['--store', proxy.url, '--workers', '2'] });
    const c = await testClient(d);
    // Senders on both shards, so each shard has opened connections of its own.
    await Promise.all(Array.from({ length: 8 }, (_, i) => c.send('assistant', `hello ${i}`, { sender: `s${i}` })));
    // Lists at once: each storage thread takes some, and opens connections of its own.
    await Promise.all(Array.from({ length: 16 }, () => c.request('list_conversations', {})));
    await c.close();
    expect(proxy.open()).toBeGreaterThan(2);
    expect((await d.stop()).code).toBe(0);
    await waitFor(() => proxy.open() === 0, 'the relay to see every session end');
    const ended = proxy.ended();
    expect(ended.length).toBeGreaterThan(2);
    expect(ended.filter((goodbye) => !goodbye)).toEqual([]);
  }, SLOW);
});
