/** The schedules table as SQLite runs it (storage/schedule-calls.ts says what each call means). */
import type { Db } from './db.ts';
import { insertNamed, preparedOnce } from './named-rows.ts';
import type { ScheduleCall, ScheduleRecord } from '../schedule-calls.ts';

const COLUMNS = 'name, source, payload, cron, every_ms, at, timezone, catch_up, created_at, next_at, fires, last_fired_at, claim_until';

function statements(db: Db) {
  return {
    count: db.prepare<[], { n: number }>('SELECT count(*) AS n FROM schedules'),
    insert: db.prepare<Record<string, unknown>>(
      `INSERT INTO schedules (${COLUMNS}) VALUES (@name, @source, @payload, @cron, @every_ms, @at, @timezone, @catch_up, @created_at, @next_at, @fires, @last_fired_at, @claim_until)
       ON CONFLICT (name) DO NOTHING`,
    ),
    delete: db.prepare<[string]>('DELETE FROM schedules WHERE name = ?'),
    list: db.prepare<[], ScheduleRecord>(`SELECT ${COLUMNS} FROM schedules ORDER BY name`),
    get: db.prepare<[string], ScheduleRecord>(`SELECT ${COLUMNS} FROM schedules WHERE name = ?`),
    claim: db.prepare<[string, number, number, string, number, number]>(
      'UPDATE schedules SET claim_node = ?, claim_until = ?, claim_due = ? WHERE name = ? AND next_at = ? AND (claim_until IS NULL OR claim_until < ?)',
    ),
    fired: db.prepare<[number | null, number, string, number, string]>(
      'UPDATE schedules SET next_at = ?, last_fired_at = ?, fires = fires + 1, claim_node = NULL, claim_until = NULL, claim_due = NULL WHERE name = ? AND next_at = ? AND claim_node = ?',
    ),
    firedOnce: db.prepare<[string, number, string]>('DELETE FROM schedules WHERE name = ? AND next_at = ? AND claim_node = ?'),
    skip: db.prepare<[number, string, number]>('UPDATE schedules SET next_at = ? WHERE name = ? AND next_at = ? AND claim_until IS NULL'),
    skipOnce: db.prepare<[string, number]>('DELETE FROM schedules WHERE name = ? AND next_at = ? AND claim_until IS NULL'),
  };
}

const prepared = new WeakMap<Db, ReturnType<typeof statements>>();

/** Runs one schedule call; the caller holds the write lock. */
export function runScheduleCall(db: Db, c: ScheduleCall): unknown {
  const s = preparedOnce(prepared, db, statements);
  switch (c.call) {
    case 'insert':
      return insertNamed(db, s, c.record, c.max);
    case 'delete':
      return s.delete.run(c.name).changes === 1;
    case 'list':
      return s.list.all();
    case 'get':
      return s.get.get(c.name) ?? null;
    case 'claim':
      return s.claim.run(c.node, c.until, c.due, c.name, c.due, c.now).changes === 1;
    case 'fired':
      return (c.next === null ? s.firedOnce.run(c.name, c.due, c.node) : s.fired.run(c.next, c.due, c.name, c.due, c.node)).changes === 1;
    case 'skip':
      return (c.next === null ? s.skipOnce.run(c.name, c.due) : s.skip.run(c.next, c.name, c.due)).changes === 1;
  }
}
