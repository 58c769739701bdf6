/**
 * Export and import end to end: conversations of a daemon on SQLite (several
 * pairs, tool calls, a compacted one) exported with `agentctl export`, then
 * imported with `agentctl import` into a daemon on PostgreSQL: the histories,
 * titles and summaries are the same; importing again adds nothing; a
 * malformed line stops the import naming the line, with nothing of its batch
 * written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanup, startDaemon, type Daemon } from '../helpers/daemon.ts';
import { ctl } from '../helpers/cli.ts';
import { createTestDatabase, needPostgres, type TestDatabase } from '../helpers/postgres.ts';
import type { AgentdClient, ExportRecord } from '../../src/client/index.ts';

const skip = await needPostgres();
const CONFIG = { agents: { assistant: { model: 'echo' }, helper: { model: 'echo', tools: ['peers'], max_iterations: 3 } } };
/** Two daemons start on a loaded 2-core machine; a start alone can take 20 s. */
const SLOW = 120_000;

let source: Daemon;
let target: Daemon;
let db: TestDatabase;
let cs: AgentdClient;
let ct: AgentdClient;
let file: string;

/** Every record of a daemon's store, as export gives them, without the times the import sets anew. */
async function records(c: AgentdClient, filter: { agent?: string; sender?: string } = {}): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const r of c.exportRecords({ ...filter, pageSize: 3 })) {
    const { created_at: _c, ...rest } = r as ExportRecord & { updated_at?: string };
    if (rest.type === 'conversation') delete (rest as { updated_at?: string }).updated_at;
    out.push(rest);
  }
  return out;
}

const history = (c: AgentdClient, agent: string, sender: string): Promise<unknown> => c.call('get_conversation_history', { agent, sender });

beforeAll(async () => {
  if (skip !== null) return;
  db = await createTestDatabase();
  [source, target] = await Promise.all([
    startDaemon({ config: CONFIG, args: ['--store', 'sqlite'] }),
    startDaemon({ config: CONFIG, args: ['--store', db.url] }),
  ]);
  cs = await source.client();
  ct = await target.client();
  for (let t = 0; t < 4; t++) await cs.send('assistant', `alice turn ${t} about quokkas`, { sender: 'alice' });
  await cs.compact('assistant', { sender: 'alice' });
  await cs.send('assistant', 'after the summary', { sender: 'alice' });
  await cs.send('assistant', 'hello from bob', { sender: 'bob' });
  await cs.send('helper', '/call peers {}', { sender: 'alice' });
  file = join(source.home, 'export.jsonl');
}, SLOW);
afterAll(async () => {
  if (skip !== null) return;
  await cs.close();
  await ct.close();
  await Promise.all([cleanup(source), cleanup(target)]);
  await db.drop();
});

describe.skipIf(skip !== null)('agentctl export and import', () => {
  it('exports a header and each conversation with its messages, progress on stderr', async () => {
    const r = await ctl(source.socketPath, ['export']);
    expect(r.code).toBe(0);
    writeFileSync(file, r.stdout);
    const lines = r.stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines[0]).toMatchObject({ agentd_export: 1, agent: null, sender: null });
    const convs = lines.filter((l) => l.type === 'conversation');
    expect(convs.map((c) => `${c.agent}/${c.sender}`).sort()).toEqual(['assistant/alice', 'assistant/bob', 'helper/alice']);
    const alice = convs.find((c) => c.agent === 'assistant' && c.sender === 'alice')!;
    expect(alice).toMatchObject({ summary: expect.stringContaining('quokkas'), summary_upto: 8, message_count: 10 });
    const tools = lines.filter((l) => l.type === 'message' && (l.message as { tool_calls?: unknown }).tool_calls !== undefined);
    expect(tools.length).toBeGreaterThan(0);
    expect(r.stderr).toMatch(/exported 3 conversations, \d+ messages: done/);
  });

  it('imports into PostgreSQL: histories, titles and summaries as they were', async () => {
    const r = await ctl(target.socketPath, ['import', file]);
    expect(r.stderr).toMatch(/imported 3 conversations, \d+ messages: done/);
    expect(r.code).toBe(0);
    for (const [agent, sender] of [['assistant', 'alice'], ['assistant', 'bob'], ['helper', 'alice']] as const) {
      expect(await history(ct, agent, sender)).toEqual(await history(cs, agent, sender));
    }
    expect(await records(ct)).toEqual(await records(cs));
    // The imported summary is what the model sees: the next turn continues the conversation as on the source.
    await ct.send('assistant', 'one more', { sender: 'alice' });
    expect((await ct.listConversations({ agent: 'assistant', sender: 'alice' }))[0]!.message_count).toBe(12);
    await ct.deleteConversation('assistant', 'alice');
    expect((await ctl(target.socketPath, ['import', file])).code).toBe(0);
  });

  it('importing again adds nothing', async () => {
    const before = await records(ct);
    const r = await ctl(target.socketPath, ['import', file, '--json']);
    expect(r.code).toBe(0);
    const counts = JSON.parse(r.stdout) as { conversations: number; messages: number; skipped: number };
    expect(counts).toMatchObject({ conversations: 3, messages: 0 });
    expect(counts.skipped).toBeGreaterThan(10);
    expect(await records(ct)).toEqual(before);
  });

  it('a malformed line stops the import naming it; nothing of its batch is written', async () => {
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    const carol = (idx: number, content: string): string =>
      JSON.stringify({ type: 'message', agent: 'assistant', sender: 'carol', idx, created_at: '2026-01-01T00:00:00.000Z', message: { role: idx % 2 === 0 ? 'user' : 'assistant', content } });
    const head = JSON.stringify({ type: 'conversation', agent: 'assistant', sender: 'carol', title: 'carol', created_at: '2026-01-01T00:00:00.000Z', updated_at: '2026-01-01T00:00:00.000Z', summary: null, summary_upto: 0, message_count: 3 });
    const broken = join(source.home, 'broken.jsonl');
    writeFileSync(broken, [lines[0], head, carol(0, 'hi'), carol(1, 'hi'), '{"type": "message", "agent": "assistant",', carol(2, 'more')].join('\n'));
    const r = await ctl(target.socketPath, ['import', broken]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/line 5: not valid JSON/);
    expect(await records(ct, { sender: 'carol' })).toEqual([]);
    // One the daemon refuses (a role it does not know) names its line too.
    writeFileSync(broken, [lines[0], head, carol(0, 'hi'), carol(1, 'hi').replace('"assistant","content"', '"bogus","content"')].join('\n'));
    const refused = await ctl(target.socketPath, ['import', broken]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/error 400: line 4 \(assistant\/carol\): import_messages\.messages\[1\]\.role must be "user", "assistant" or "tool"/);
    expect(await records(ct, { sender: 'carol' })).toEqual([]);
    // A file that is not an export at all.
    writeFileSync(broken, head);
    expect((await ctl(target.socketPath, ['import', broken])).stderr).toMatch(/line 1: not an agentd export/);
  });

  it('refuses a batch that holds other messages than the stored conversation, or leaves a gap', async () => {
    await expect(ct.importMessages({ agent: 'assistant', sender: 'bob', from: 0, messages: [{ role: 'user', content: 'not what bob said' }] }))
      .rejects.toMatchObject({ code: 409, message: expect.stringMatching(/position 0 .* holds a different message/) });
    await expect(ct.importMessages({ agent: 'assistant', sender: 'bob', from: 7, messages: [{ role: 'user', content: 'x' }] }))
      .rejects.toMatchObject({ code: 409, message: expect.stringMatching(/holds 2 messages; this batch starts at position 7/) });
    await expect(ct.importMessages({ agent: 'nobody', sender: 'bob', from: 0, messages: [] })).rejects.toMatchObject({ code: 404 });
  });

  it('serves what waited behind an import from the conversation as imported', async () => {
    // Sent together on one connection, so they reach the shard while the import holds the pair.
    const batch = [{ role: 'user' as const, content: 'dan said hi' }, { role: 'assistant' as const, content: 'dan said hi' }];
    const [imported, before, sent] = await Promise.all([
      ct.importMessages({ agent: 'assistant', sender: 'dan', from: 0, messages: batch }),
      ct.history('assistant', 'dan'),
      ct.send('assistant', 'and more', { sender: 'dan' }),
    ]);
    expect(imported).toEqual({ imported: 2, skipped: 0 });
    expect(before.messages.map((m) => m.content)).toEqual(['dan said hi', 'dan said hi']);
    expect(sent.content).toBe('and more');
    expect((await ct.history('assistant', 'dan')).messages.map((m) => m.content)).toEqual(['dan said hi', 'dan said hi', 'and more', 'and more']);
  });
});
