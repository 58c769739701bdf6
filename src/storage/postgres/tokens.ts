/** Scoped tokens as PostgreSQL keeps them, shared by every cluster node (storage/token-calls.ts says what each call means). */
import type pg from 'pg';
import type { TokenCall, TokenRecord } from '../token-calls.ts';
import { inTransaction } from './pool.ts';

const COLUMNS = 'id, hash, scopes, agents, sender, label, created_at';
/** Several nodes creating tokens at once: the lock keeps the count and its insert together. */
const TOKENS_LOCK = 0x746f6b65;

function record(row: Record<string, unknown>): TokenRecord {
  return { ...(row as unknown as TokenRecord), created_at: Number(row.created_at) };
}

export async function runPgTokenCall(pool: pg.Pool, c: TokenCall): Promise<unknown> {
  switch (c.call) {
    case 'insert':
      return inTransaction(pool, async (client) => {
        await client.query('SELECT pg_advisory_xact_lock($1)', [TOKENS_LOCK]);
        if (Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM tokens')).rows[0]!.n) >= c.max) return 'full';
        const r = c.record;
        await client.query(`INSERT INTO tokens (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [r.id, r.hash, r.scopes, r.agents, r.sender, r.label, r.created_at]);
        return 'ok';
      });
    case 'get': {
      const rows = (await pool.query(`SELECT ${COLUMNS} FROM tokens WHERE id = $1`, [c.id])).rows;
      return rows.length === 0 ? null : record(rows[0]);
    }
    case 'list':
      return (await pool.query(`SELECT ${COLUMNS} FROM tokens ORDER BY created_at, id`)).rows.map(record);
    case 'delete':
      return (await pool.query('DELETE FROM tokens WHERE id = $1', [c.id])).rowCount === 1;
  }
}
