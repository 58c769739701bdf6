/** Durable conversations end to end: restart, cancellation, compaction, search, delete, crash safety. */
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { AgentdClient } from '../../src/client/index.ts';
import { shardOf } from '../../src/shared/hash.ts';
import { collect, makeHome, runAgentd, startDaemon, waitFor, type Daemon, waitRunning, testDaemon, testClient, type DaemonOptions, streamKilledAtFirstChunk, TEST_STORE } from '../helpers/daemon.ts';

// This file runs on both stores (the vitest projects "sqlite" and "postgres"); a test about the SQLite file itself runs on SQLite only.
const onSqlite = TEST_STORE === 'sqlite';
if (!onSqlite) console.warn('storage.test.ts on PostgreSQL: the SQLite file tests (integrity check, newer schema file) are skipped here; test/e2e/pg-store.test.ts has their PostgreSQL counterparts');

const CONFIG = { agents: { assistant: { model: 'echo' }, slow: { model: 'echo', echo: { delay_ms: 20 } } } };

const daemon = (opts: DaemonOptions = {}): Promise<Daemon> => testDaemon({ config: CONFIG, ...opts });
const client = (d: Daemon): Promise<AgentdClient> => testClient(d);
type History = { agent: string; sender: string; title: string; messages: { role: string; content: string; agent?: string }[] };
const history = async (c: AgentdClient, agent: string, sender: string): Promise<History> =>
  (await c.request('get_conversation_history', { agent, sender })).conversation_history as History;

describe('durable conversations', () => {
  it('continue their history after a restart', async () => {
    const first = await startDaemon({ config: CONFIG });
    const c1 = await first.client();
    await c1.send('assistant', 'remember the blue door', { sender: 'alice' });
    await c1.send('assistant', 'and the red key', { sender: 'alice' });
    await c1.close();
    expect((await first.stop()).code).toBe(0);

    const d = await daemon({ home: first.home });
    const c = await client(d);
    const r = await c.send('assistant', 'what now', { sender: 'alice' });
    expect(r.usage.prompt_tokens).toBe(4 + 4 + 4 + 4 + 2);
    const h = await history(c, 'assistant', 'alice');
    expect(h.title).toBe('remember the blue door');
    expect(h.messages.map((m) => m.content)).toEqual([
      'remember the blue door', 'remember the blue door', 'and the red key', 'and the red key', 'what now', 'what now',
    ]);
    const list = (await c.request('list_conversations', { agent: 'assistant' })).conversation_list as { conversations: Record<string, unknown>[] };
    expect(list.conversations).toEqual([
      { agent: 'assistant', sender: 'alice', title: 'remember the blue door', message_count: 6, created_at: expect.any(String), updated_at: expect.any(String) },
    ]);
    expect(Date.parse(list.conversations[0]!.created_at as string)).not.toBeNaN();
  });

  it('a cancelled turn keeps the user message and the text already streamed', async () => {
    const d = await daemon();
    const c = await client(d);
    const k = await client(d);
    const evs = await streamKilledAtFirstChunk(c, k, 'slow', 'one two three four five six seven eight nine ten', 'cut');
    const streamed = evs.map((e) => (e.type === 'chunk' ? e.content : '')).join('');
    const h = await history(c, 'slow', 'cut');
    expect(h.messages).toEqual([
      { role: 'user', content: 'one two three four five six seven eight nine ten' },
      { role: 'assistant', content: streamed },
    ]);
  });

  it('ephemeral turns write nothing', async () => {
    const d = await daemon();
    const c = await client(d);
    await collect(c.stream('assistant', 'passing thought', { sender: 'eph', ephemeral: true }));
    await expect(c.request('get_conversation_history', { agent: 'assistant', sender: 'eph' })).rejects.toMatchObject({ code: 404 });
    const list = (await c.request('list_conversations', {})).conversation_list as { conversations: unknown[] };
    expect(list.conversations).toEqual([]);
  });

  it('compaction: the next turn sees the summary, the old messages stay stored and searchable', async () => {
    const d = await daemon();
    const c = await client(d);
    await c.send('assistant', 'the platypus lays eggs', { sender: 'zoo' });
    await c.send('assistant', 'echidnas do too', { sender: 'zoo' });
    const { compact } = (await c.request('compact', { agent: 'assistant', sender: 'zoo' })) as { compact: { summary: string } };
    expect(compact.summary).toBe('4 messages; the user said: the platypus lays eggs / echidnas do too');
    const next = await c.send('assistant', 'so', { sender: 'zoo' });
    // The model received the summary (a system message) and the new message, not the four old ones.
    const summaryWords = `Summary of the conversation so far: ${compact.summary}`.split(/\s+/).length;
    expect(next.usage.prompt_tokens).toBe(summaryWords + 1);
    expect((await history(c, 'assistant', 'zoo')).messages).toHaveLength(6);
    const hits = (await c.request('search_sessions', { query: 'platypus' })).session_hits as { hits: { sender: string; msg_idx: number }[] };
    expect(hits.hits.map((h) => h.sender)).toEqual(['zoo']);

    // Survives a restart: the summary is stored too.
    await d.stop();
    const d2 = await daemon({ home: d.home });
    const c2 = await client(d2);
    const after = await c2.send('assistant', 'so', { sender: 'zoo' });
    expect(after.usage.prompt_tokens).toBe(summaryWords + 1 + 1 + 1);

    await expect(c2.request('compact', { agent: 'assistant', sender: 'nobody' })).rejects.toMatchObject({ code: 404 });
    await expect(c2.request('compact', { agent: 'ghost' })).rejects.toMatchObject({ code: 404 });
  });

  it('search over the socket: words not syntax, limits, filters, and delete removes a conversation from it', async () => {
    const d = await daemon();
    const c = await client(d);
    for (let i = 0; i < 8; i++) await c.send('assistant', `durian report number ${i}`, { sender: `s${i}` });
    const search = async (args: Record<string, unknown>) => ((await c.request('search_sessions', args)).session_hits as { hits: { sender: string; window: unknown[] }[] }).hits;
    expect(await search({ query: 'durian' })).toHaveLength(5);
    expect(await search({ query: 'durian', limit: 100 })).toHaveLength(8);
    expect(await search({ query: 'durian', limit: 0 })).toHaveLength(1);
    expect(await search({ query: '' })).toEqual([]);
    expect(await search({ query: '"(* NEAR OR -)"' })).toEqual([]);
    expect((await search({ query: 'durian', sender: 's3' })).map((h) => h.sender)).toEqual(['s3']);
    expect(await search({ query: 'durian', agent: 'slow' })).toEqual([]);
    await expect(c.request('search_sessions', { query: 5 })).rejects.toMatchObject({ code: 400 });
    // A query is at most 1,024 bytes of UTF-8: 512 two-byte characters pass, one more byte does not.
    expect(await search({ query: 'ж'.repeat(512) })).toEqual([]);
    await expect(c.request('search_sessions', { query: `${'ж'.repeat(512)}a` })).rejects.toMatchObject({
      code: 400,
      message: 'search_sessions.query must be at most 1024 bytes of UTF-8',
    });

    await c.request('delete_conversation', { agent: 'assistant', sender: 's3' });
    expect((await search({ query: 'durian', sender: 's3' }))).toEqual([]);
    await expect(c.request('delete_conversation', { agent: 'assistant', sender: 's3' })).rejects.toMatchObject({ code: 404 });
    await expect(c.request('get_conversation_history', { agent: 'assistant', sender: 's3' })).rejects.toMatchObject({ code: 404 });
    // The pair starts over.
    expect((await c.send('assistant', 'new start', { sender: 's3' })).usage.prompt_tokens).toBe(2);
  });

  it('delete cancels a running turn first and nothing of it is stored afterwards', async () => {
    const d = await daemon();
    const c = await client(d);
    // 1,000 words at 20 ms: the turn cannot end on its own before the delete reaches it, however slow the machine.
    const turn = collect(c.stream('slow', Array.from({ length: 1_000 }, (_, i) => `w${i}`).join(' '), { sender: 'del' }));
    await waitRunning(c, 'slow', 'del');
    await c.request('delete_conversation', { agent: 'slow', sender: 'del' });
    expect((await turn).at(-1)).toMatchObject({ type: 'end', stop_reason: 'cancelled', error: 'conversation deleted' });
    await expect(c.request('get_conversation_history', { agent: 'slow', sender: 'del' })).rejects.toMatchObject({ code: 404 });
    const list = (await c.request('list_conversations', { agent: 'slow' })).conversation_list as { conversations: unknown[] };
    expect(list.conversations).toEqual([]);
  });

  it('idle conversations leave memory past the budget and come back from storage', async () => {
    const d = await daemon({ workers: 2, config: { ...CONFIG, memory_conversations: 4 } });
    const c = await client(d);
    for (let i = 0; i < 12; i++) await c.send('assistant', `hello number ${i}`, { sender: `m${i}` });
    // Each of the 2 shards keeps its 2 most recently used (4 / 2); a turn's end comes after its shard evicted.
    const kept = (senders: string[]): string[] => [0, 1].flatMap((shard) => senders.filter((s) => shardOf('assistant', s, 2) === shard).slice(-2)).sort();
    const senders = Array.from({ length: 12 }, (_, i) => `m${i}`);
    const active = async (): Promise<{ sender: string; title: string }[]> =>
      ((await c.request('list_active_conversations', {})).active_conversations as { conversations: { sender: string; title: string }[] }).conversations;
    const before = await active();
    expect(before.map((x) => x.sender).sort()).toEqual(kept(senders));
    for (const x of before) expect(x.title).toBe(`hello number ${x.sender.slice(1)}`);
    const back = await c.send('assistant', 'again', { sender: 'm0' });
    expect(back.usage.prompt_tokens).toBe(3 + 3 + 1);
    expect((await active()).map((x) => x.sender).sort()).toEqual(kept([...senders, 'm0'].filter((s, i, all) => all.lastIndexOf(s) === i)));
  });

  it('kill -9 during a load of streamed turns loses no acknowledged turn and stores no partial one', async () => {
    const first = await startDaemon({ config: CONFIG });
    const c1 = await first.client();
    const acked = new Map<string, number>(); // sender -> turns whose end arrived
    let stop = false;
    const pairs = Array.from({ length: 24 }, (_, p) => `crash-${p}`);
    const loops = pairs.map(async (sender) => {
      for (let t = 0; !stop; t++) {
        try {
          const evs = await collect(c1.stream('assistant', `${sender} turn ${t} with five words`, { sender }));
          if (evs.at(-1)?.type === 'end' && (evs.at(-1) as { stop_reason: string }).stop_reason === 'text') acked.set(sender, t + 1);
        } catch {
          return; // the daemon died under us
        }
      }
    });
    await waitFor(() => [...acked.values()].reduce((a, b) => a + b, 0) > 200, 'some turns to finish');
    first.proc.kill('SIGKILL');
    await first.exited;
    stop = true;
    await Promise.all(loops);
    await c1.close();

    const d = await daemon({ home: first.home });
    const c = await client(d);
    for (const sender of pairs) {
      const n = acked.get(sender) ?? 0;
      let messages: History['messages'] = [];
      try {
        messages = (await history(c, 'assistant', sender)).messages;
      } catch (err) {
        expect(n, `${sender} had acknowledged turns but no history`).toBe(0);
        expect(err).toMatchObject({ code: 404 });
      }
      // Whole turns only, in order: user then its echo, every acknowledged one present.
      expect(messages.length % 2, sender).toBe(0);
      expect(messages.length / 2).toBeGreaterThanOrEqual(n);
      messages.forEach((m, i) => {
        const t = Math.floor(i / 2);
        expect(m).toEqual({ role: i % 2 ? 'assistant' : 'user', content: `${sender} turn ${t} with five words` });
      });
    }
    await d.stop();
    if (!onSqlite) return;
    const db = new Database(join(first.home, 'agentd.db'), { readonly: true });
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    db.close();
  });

  it.skipIf(!onSqlite)('a database from a newer agentd is refused and left untouched', async () => {
    const home = makeHome();
    const path = join(home, 'agentd.db');
    const db = new Database(path);
    db.pragma('user_version = 99');
    db.close();
    const before = readFileSync(path);
    const mtime = statSync(path).mtimeMs;
    const r = await runAgentd(['--home', home, '--tcp', 'off']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/schema version 99, newer than this agentd understands/);
    expect(readFileSync(path).equals(before)).toBe(true);
    expect(statSync(path).mtimeMs).toBe(mtime);
  });

  it('persist: false stores nothing (benchmark mode)', async () => {
    const d = await daemon({ config: { ...CONFIG, persist: false } });
    const c = await client(d);
    await c.send('assistant', 'not kept', { sender: 'p' });
    expect(((await c.request('list_conversations', {})).conversation_list as { conversations: unknown[] }).conversations).toEqual([]);
    expect((await history(c, 'assistant', 'p')).messages).toHaveLength(2);
  });

  it('--store sqlite:PATH keeps everything in that file', async () => {
    const d = await daemon({ args: ['--store', 'sqlite:elsewhere.db'] });
    const c = await client(d);
    await c.send('assistant', 'kept elsewhere', { sender: 'e' });
    await d.stop();
    expect(existsSync(join(d.home, 'agentd.db'))).toBe(false);
    const db = new Database(join(d.home, 'elsewhere.db'), { readonly: true });
    expect(db.prepare('SELECT content FROM messages ORDER BY idx').all()).toEqual([{ content: 'kept elsewhere' }, { content: 'kept elsewhere' }]);
    db.close();
  });

  it('a postgres store that does not answer fails the start, naming the store without its password', async () => {
    const home = makeHome();
    const url = 'postgres://agentd:pw-never-shown@127.0.0.1:1/agentd';
    const r = await runAgentd(['--home', home, '--tcp', 'off', '--store', url]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('cannot reach the PostgreSQL store postgres://agentd:***@127.0.0.1:1/agentd');
    expect(r.stderr).not.toContain('pw-never-shown');
    expect(existsSync(join(home, 'agentd.db'))).toBe(false);
  });
});
