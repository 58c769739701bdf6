/**
 * The turn writer's group commit (SQLite), in-process over real
 * MessageChannels: a shard commits a batch it finished alone itself while
 * the write lock is free and hands it to the writer otherwise; batches from several shards
 * that reach the writer together are committed in one transaction; one bad turn fails alone; a lost writer
 * fails what waited on it (unless it was committed just before), and a new
 * port takes over.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import { migrate, openDatabase } from '../../src/storage/sqlite/db.ts';
import { createWriteLockBuffer, ownerToken, STORAGE_POOL_TOKEN, WRITER_TOKEN, WriteLock } from '../../src/storage/sqlite/write-lock.ts';
import { ConversationStore, DIRECT_COMMIT_CHARS, SqliteConversationStorage } from '../../src/storage/sqlite/store.ts';
import { WriterClient } from '../../src/threads/writer/writer-client.ts';
import type { CommitRequest } from '../../src/threads/writer/messages.ts';
import type { ConversationRef, ConversationStorage } from '../../src/storage/contract.ts';
import { InProcessWriter } from '../helpers/sqlite-writer.ts';

let dir = '';
const closers: (() => unknown)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  rmSync(dir, { recursive: true, force: true });
});

function setup(): { path: string; lock: SharedArrayBuffer; writer: InProcessWriter; shard(i: number): SqliteConversationStorage } {
  dir = mkdtempSync(join(tmpdir(), 'agentd-group-commit-'));
  const path = join(dir, 'agentd.db');
  const db = openDatabase(path);
  migrate(db, path);
  db.close();
  const lock = createWriteLockBuffer();
  const writer = new InProcessWriter(path, lock);
  closers.push(() => writer.close());
  const shard = (i: number): SqliteConversationStorage => {
    const s = writer.shard(ownerToken(i));
    closers.push(() => s.close());
    return s;
  };
  return { path, lock, writer, shard };
}

const conv = (sender: string): ConversationRef => ({ dbId: null, agent: 'a', sender, title: '', stored: 0 });
const contents = async (s: ConversationStorage, sender: string): Promise<string[]> => ((await s.load('a', sender))?.recent ?? []).map((m) => m.content);

describe('group commit across shards', () => {
  it('commits batches that several shards sent together in one transaction, and sets each row id', async () => {
    const { writer, shard } = setup();
    const shards = [shard(0), shard(1), shard(2)];
    const refs = shards.map((_, i) => conv(`s${i}`));
    const before = writer.committer.commits;
    const results = await Promise.all(shards.map((s, i) => s.writeTurns([{ conv: refs[i]!, messages: [{ role: 'user', content: `from shard ${i}` }] }])));
    expect(results).toEqual([[null], [null], [null]]);
    expect(writer.committer.commits - before).toBe(1);
    expect(new Set(refs.map((r) => r.dbId)).size).toBe(3);
    // Each shard reads what the writer committed, on its own connection.
    for (const [i, s] of shards.entries()) expect(await contents(s, `s${i}`)).toEqual([`from shard ${i}`]);
  });

  it("a batch with a big message is committed on the shard's own connection, not sent to the writer", async () => {
    const { writer, shard } = setup();
    const s = shard(0);
    const big = 'ünï '.repeat(DIRECT_COMMIT_CHARS / 4);
    const before = writer.committer.commits;
    const ref = conv('big');
    expect(await s.writeTurns([{ conv: ref, messages: [{ role: 'user', content: big }, { role: 'assistant', content: 'small' }] }])).toEqual([null]);
    expect(writer.committer.commits).toBe(before);
    expect(ref.dbId).toBe((await s.load('a', 'big'))!.id);
    expect(await contents(s, 'big')).toEqual([big, 'small']);
    // The pair's next, small turn goes through the writer and lands after it.
    ref.stored = 2;
    expect(await s.writeTurns([{ conv: ref, messages: [{ role: 'user', content: 'next' }] }])).toEqual([null]);
    expect(writer.committer.commits).toBe(before + 1);
    expect(await contents(s, 'big')).toEqual([big, 'small', 'next']);
  });

  it('a batch finished alone is committed by the shard while the lock is free, and handed to the writer otherwise', async () => {
    const { lock, writer } = setup();
    const s = writer.shard(ownerToken(0), true);
    closers.push(() => s.close());
    const ref = conv('here');
    const before = writer.committer.commits;
    expect(await s.writeTurns([{ conv: ref, messages: [{ role: 'user', content: 'one' }] }], true)).toEqual([null]);
    expect(writer.committer.commits).toBe(before);
    expect(ref.dbId).toBe((await s.load('a', 'here'))!.id);

    // Another thread (here a storage thread's token) holds the lock: the batch must not wait for it.
    const other = new WriteLock(lock, STORAGE_POOL_TOKEN);
    other.acquire();
    ref.stored = 1;
    const handed = s.writeTurns([{ conv: ref, messages: [{ role: 'user', content: 'two' }] }], true);
    other.release(); // before the writer takes the batch, or it would wait on this thread
    expect(await handed).toEqual([null]);
    expect(writer.committer.commits).toBe(before + 1);
    // A batch not finished alone (the shard has more under way) goes to the writer though the lock is free.
    ref.stored = 2;
    expect(await s.writeTurns([{ conv: ref, messages: [{ role: 'user', content: 'three' }] }], false)).toEqual([null]);
    expect(writer.committer.commits).toBe(before + 2);
    expect(await contents(s, 'here')).toEqual(['one', 'two', 'three']);
  });

  it('one bad turn fails alone: the other shards\' turns of the same commit are stored', async () => {
    const { shard } = setup();
    const [a, b] = [shard(0), shard(1)];
    const good = conv('good');
    const bad: ConversationRef = { dbId: 999_999, agent: 'a', sender: 'bad', title: '', stored: 0 }; // no such row: the foreign key refuses it
    const [fromA, fromB] = await Promise.all([
      a.writeTurns([{ conv: bad, messages: [{ role: 'user', content: 'refused' }] }]),
      b.writeTurns([{ conv: good, messages: [{ role: 'user', content: 'kept' }] }]),
    ]);
    expect(fromA[0]).toBeInstanceOf(Error);
    expect(fromA[0]!.message).toMatch(/FOREIGN KEY/);
    expect(fromB).toEqual([null]);
    expect(await contents(b, 'good')).toEqual(['kept']);
  });

  it('a writer lost before it committed fails what waited on it; a new port takes over', async () => {
    const { path, lock, writer } = setup();
    // A "writer" that takes the batch and dies without committing it.
    const { port1: dying, port2 } = new MessageChannel();
    const got = new Promise<void>((resolve) => dying.once('message', () => resolve()));
    const client = new WriterClient(port2);
    const s = new SqliteConversationStorage(openDatabase(path), new WriteLock(lock, ownerToken(0)), client, false);
    closers.push(() => s.close());
    const x = conv('x');
    const pending = s.writeTurns([{ conv: x, messages: [{ role: 'user', content: 'lost' }] }]);
    await got;
    dying.close();
    const [err] = await pending;
    expect(err?.message).toMatch(/turn writer thread stopped before it answered; the turn was not stored/);
    expect(x.dbId).toBeNull();
    expect(await s.exists('a', 'x')).toBe(false);
    // Until a new port comes, a batch is refused at once; then it is committed.
    expect((await s.writeTurns([{ conv: x, messages: [{ role: 'user', content: 'early' }] }]))[0]?.message).toMatch(/being replaced/);
    const fresh = new MessageChannel();
    writer.committer.serve(fresh.port1);
    client.attach(fresh.port2);
    expect(await s.writeTurns([{ conv: x, messages: [{ role: 'user', content: 'again' }] }])).toEqual([null]);
    expect(await contents(s, 'x')).toEqual(['again']);
  });

  it('a writer lost after it committed, before it answered: the turn counts as stored', async () => {
    const { path, lock } = setup();
    const db = openDatabase(path);
    closers.push(() => db.close());
    const store = new ConversationStore(db, new WriteLock(lock, WRITER_TOKEN));
    // A "writer" that commits the batch and dies before it replies.
    const { port1: dying, port2 } = new MessageChannel();
    dying.once('message', (req: CommitRequest) => {
      expect(store.writeTurns(req.turns).every((r) => typeof r === 'number')).toBe(true);
      dying.close();
    });
    const s = new SqliteConversationStorage(openDatabase(path), new WriteLock(lock, ownerToken(0)), new WriterClient(port2), false);
    closers.push(() => s.close());
    const y = conv('y');
    expect(await s.writeTurns([{ conv: y, messages: [{ role: 'user', content: 'landed' }, { role: 'assistant', content: 'landed' }] }])).toEqual([null]);
    expect(y.dbId).toBe((await s.load('a', 'y'))!.id);
  });
});
