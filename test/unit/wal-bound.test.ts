/**
 * The WAL bound (issue 11, "flat under sustained load"): a PASSIVE
 * checkpoint cannot shrink a WAL that a reader keeps in use, so the file
 * grows with every write; boundedCheckpoint switches to TRUNCATE under the
 * write lock once the WAL passes half of wal_max_bytes, and the file empties.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { boundedCheckpoint, openDatabase, type Db } from '../../src/storage/sqlite/db.ts';
import { createWriteLockBuffer, STORAGE_POOL_TOKEN, WriteLock } from '../../src/storage/sqlite/write-lock.ts';

const KIB = 1024;
let dir = '';
const open: Db[] = [];

afterEach(() => {
  for (const db of open.splice(0)) db.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function setup(): { writer: Db; reader: Db; other: Db; walPath: string } {
  dir = mkdtempSync(join(tmpdir(), 'agentd-wal-'));
  const path = join(dir, 'test.db');
  const writer = openDatabase(path);
  writer.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
  const reader = openDatabase(path);
  const other = openDatabase(path);
  open.push(writer, reader, other);
  return { writer, reader, other, walPath: `${path}-wal` };
}

const walBytes = (p: string): number => statSync(p).size;

/**
 * One round of load as a busy daemon has it: two readers whose snapshots
 * overlap (searches on two storage threads), so at every moment, including
 * each write, some reader holds the WAL. `held` starts the round inside a
 * snapshot and ends it; `next` takes over and is left open for the next round.
 */
function round(writer: Db, held: Db, next: Db, rows: number): void {
  const insert = writer.prepare('INSERT INTO t (body) VALUES (?)');
  writer.transaction(() => {
    for (let i = 0; i < rows; i++) insert.run('x'.repeat(512));
  })();
  next.exec('BEGIN');
  next.prepare('SELECT count(*) AS n FROM t').get();
  held.exec('COMMIT');
}

function begin(reader: Db): void {
  reader.exec('BEGIN');
  reader.prepare('SELECT count(*) AS n FROM t').get();
}

describe('boundedCheckpoint', () => {
  it('leaves a small WAL to PASSIVE', () => {
    const { writer, walPath } = setup();
    writer.prepare('INSERT INTO t (body) VALUES (?)').run('x');
    const buffer = createWriteLockBuffer();
    const lock = new WriteLock(buffer, STORAGE_POOL_TOKEN);
    const r = boundedCheckpoint(writer, walPath, 64 * 1024 * KIB, (fn) => lock.with(fn));
    expect(r.mode).toBe('PASSIVE');
  });

  it('keeps the WAL under the bound while a reader overlaps every write, where PASSIVE lets it grow', () => {
    const { writer, reader, other, walPath } = setup();
    const buffer = createWriteLockBuffer();
    const lock = new WriteLock(buffer, STORAGE_POOL_TOKEN);
    const bound = 512 * KIB;
    const readers = [reader, other] as const;
    let r = 0;
    const nextRound = (): void => {
      round(writer, readers[r % 2]!, readers[(r + 1) % 2]!, 50);
      r++;
    };
    begin(reader);
    // PASSIVE alone: the WAL only grows past the bound.
    for (let i = 0; i < 40; i++) {
      nextRound();
      writer.pragma('wal_checkpoint(PASSIVE)');
    }
    expect(walBytes(walPath)).toBeGreaterThan(bound);
    // Bounded: readers are brief, so the checkpoint, holding the write lock,
    // waits out the open one (here it ends first) and TRUNCATE finishes; then
    // each round adds ~30 KiB and the file never passes the bound again.
    const checkpoint = (): ReturnType<typeof boundedCheckpoint> => {
      readers[r % 2]!.exec('COMMIT');
      const c = boundedCheckpoint(writer, walPath, bound, (fn) => lock.with(fn));
      begin(readers[r % 2]!);
      return c;
    };
    expect(checkpoint()).toMatchObject({ mode: 'TRUNCATE', busy: 0 });
    expect(walBytes(walPath)).toBe(0);
    for (let i = 0; i < 60; i++) {
      nextRound();
      const c = checkpoint();
      expect(c.busy).toBe(0);
      expect(walBytes(walPath)).toBeLessThanOrEqual(bound);
    }
    readers[r % 2]!.exec('COMMIT');
    // The lock was released each time.
    expect(Atomics.load(new Int32Array(buffer), 0)).toBe(0); // free
  });

  it('reports busy, and releases the write lock, when a reader holds an old snapshot throughout', () => {
    const { writer, reader, walPath } = setup();
    const buffer = createWriteLockBuffer();
    const lock = new WriteLock(buffer, STORAGE_POOL_TOKEN);
    reader.exec('BEGIN');
    reader.prepare('SELECT count(*) FROM t').get();
    const insert = writer.prepare('INSERT INTO t (body) VALUES (?)');
    for (let i = 0; i < 100; i++) insert.run('x'.repeat(512));
    const r = boundedCheckpoint(writer, walPath, 16 * KIB, (fn) => lock.with(fn));
    reader.exec('COMMIT');
    expect(r).toMatchObject({ mode: 'TRUNCATE', busy: 1 });
    expect(Atomics.load(new Int32Array(buffer), 0)).toBe(0); // free
  });
});
