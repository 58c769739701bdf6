/** The schedules table as PostgreSQL runs it (storage/schedule-calls.ts says what each call means). */
import type pg from 'pg';
import type { InsertResult, ScheduleCall, ScheduleRecord } from '../schedule-calls.ts';

const COLUMNS = 'name, source, payload, cron, every_ms, at, timezone, catch_up, created_at, next_at, fires, last_fired_at, claim_until';
/** Of several nodes creating at once, the lock keeps the count and the insert together. */
const INSERT_LOCK = 0x7363686564;

/** BIGINT columns arrive as strings from node-postgres: back to numbers (epoch milliseconds are safe integers). */
function record(row: Record<string, unknown>): ScheduleRecord {
  const n = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
  return { ...(row as unknown as ScheduleRecord), every_ms: n(row.every_ms), at: n(row.at), created_at: Number(row.created_at), next_at: n(row.next_at), fires: Number(row.fires), last_fired_at: n(row.last_fired_at), claim_until: n(row.claim_until) };
}

async function insert(pool: pg.Pool, r: ScheduleRecord, max: number): Promise<InsertResult> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [INSERT_LOCK]);
    const exists = await client.query('SELECT 1 FROM schedules WHERE name = $1', [r.name]);
    let result: InsertResult = 'ok';
    if (exists.rowCount !== 0) result = 'exists';
    else if (Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM schedules')).rows[0]!.n) >= max) result = 'full';
    else {
      await client.query(`INSERT INTO schedules (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`, [
        r.name, r.source, r.payload, r.cron, r.every_ms, r.at, r.timezone, r.catch_up, r.created_at, r.next_at, r.fires, r.last_fired_at, r.claim_until,
      ]);
    }
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

export async function runPgScheduleCall(pool: pg.Pool, c: ScheduleCall): Promise<unknown> {
  switch (c.call) {
    case 'insert':
      return insert(pool, c.record, c.max);
    case 'delete':
      return (await pool.query('DELETE FROM schedules WHERE name = $1', [c.name])).rowCount === 1;
    case 'list':
      return (await pool.query(`SELECT ${COLUMNS} FROM schedules ORDER BY name`)).rows.map(record);
    case 'get': {
      const r = await pool.query(`SELECT ${COLUMNS} FROM schedules WHERE name = $1`, [c.name]);
      return r.rows[0] === undefined ? null : record(r.rows[0] as Record<string, unknown>);
    }
    case 'claim':
      return (await pool.query(
        'UPDATE schedules SET claim_node = $1, claim_until = $2, claim_due = $3 WHERE name = $4 AND next_at = $3 AND (claim_until IS NULL OR claim_until < $5)',
        [c.node, c.until, c.due, c.name, c.now],
      )).rowCount === 1;
    case 'fired': {
      const r = c.next === null
        ? await pool.query('DELETE FROM schedules WHERE name = $1 AND next_at = $2 AND claim_node = $3', [c.name, c.due, c.node])
        : await pool.query(
          'UPDATE schedules SET next_at = $1, last_fired_at = $2, fires = fires + 1, claim_node = NULL, claim_until = NULL, claim_due = NULL WHERE name = $3 AND next_at = $2 AND claim_node = $4',
          [c.next, c.due, c.name, c.node],
        );
      return r.rowCount === 1;
    }
    case 'skip': {
      const r = c.next === null
        ? await pool.query('DELETE FROM schedules WHERE name = $1 AND next_at = $2 AND claim_until IS NULL', [c.name, c.due])
        : await pool.query('UPDATE schedules SET next_at = $1 WHERE name = $2 AND next_at = $3 AND claim_until IS NULL', [c.next, c.name, c.due]);
      return r.rowCount === 1;
    }
  }
}
