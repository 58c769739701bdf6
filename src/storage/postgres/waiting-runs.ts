/**
 * The waiting_runs table in PostgreSQL (schema step 7). In cluster mode a
 * write checks the pair's fence in the same transaction, so a node that
 * lost the partition can neither store nor drop a waiting run of it.
 */
import type pg from 'pg';
import { fenceFor, type FenceSource } from '../../shared/partitions.ts';
import { checkFence } from './fences.ts';
import { inTransaction, type PoolClient } from './pool.ts';
import type { WaitingRunRecord } from '../contract.ts';

interface WaitingRunRow {
  run_id: string;
  agent: string;
  sender: string;
  created_at: string;
  state: string;
}

const SAVE = `INSERT INTO waiting_runs (run_id, agent, sender, created_at, updated_at, state) VALUES ($1, $2, $3, $4, $5, $6)
  ON CONFLICT (run_id) DO UPDATE SET updated_at = EXCLUDED.updated_at, state = EXCLUDED.state`;

async function fenced(pool: pg.Pool, fences: FenceSource | null, agent: string, sender: string, write: (q: pg.Pool | PoolClient) => Promise<unknown>): Promise<void> {
  if (fences === null) {
    await write(pool);
    return;
  }
  await inTransaction(pool, async (client) => {
    await checkFence(client, fenceFor(fences, agent, sender));
    await write(client);
  });
}

export function saveWaitingRun(pool: pg.Pool, fences: FenceSource | null, r: WaitingRunRecord): Promise<void> {
  if (r.state.includes('\u0000')) return Promise.reject(new Error('a waiting run holds a NUL character, which PostgreSQL cannot store'));
  return fenced(pool, fences, r.agent, r.sender, (q) => q.query(SAVE, [r.runId, r.agent, r.sender, r.createdAt, Date.now(), r.state]));
}

export function deleteWaitingRun(pool: pg.Pool, fences: FenceSource | null, runId: string, agent: string, sender: string): Promise<void> {
  return fenced(pool, fences, agent, sender, (q) => q.query('DELETE FROM waiting_runs WHERE run_id = $1', [runId]));
}

export async function waitingRuns(pool: pg.Pool): Promise<WaitingRunRecord[]> {
  const r = await pool.query<WaitingRunRow>('SELECT run_id, agent, sender, created_at, state FROM waiting_runs ORDER BY created_at, run_id');
  return r.rows.map((row) => ({ runId: row.run_id, agent: row.agent, sender: row.sender, createdAt: Number(row.created_at), state: row.state }));
}
