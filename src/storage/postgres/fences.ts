/**
 * Cluster fencing in the PostgreSQL store. A node that wins a partition
 * claims its token here before serving it (`claimFence`); every write for a
 * pair of that partition runs `agentd_check_fence` (pg-schema.ts step 2) in
 * its own transaction, which refuses any token but the current one. A claim
 * waits for the writes holding the fence row to end, so once a newer token
 * is claimed no write of an older owner can commit.
 */
import type pg from 'pg';
import type { Fence } from '../../shared/partitions.ts';
import type { PoolClient } from './pool.ts';

/** The SQLSTATE agentd_check_fence raises. */
export const FENCED_SQLSTATE = 'AGF01';

/**
 * Raises the partition's fence to `token`. True when the fence now holds
 * exactly `token`; false when a newer owner already claimed a larger one
 * (this node must not serve the partition).
 */
export async function claimFence(pool: pg.Pool, partition: number, token: number): Promise<boolean> {
  const r = await pool.query<{ token: number }>(
    `INSERT INTO partition_fences (partition, token) VALUES ($1, $2)
     ON CONFLICT (partition) DO UPDATE SET token = EXCLUDED.token WHERE partition_fences.token < EXCLUDED.token
     RETURNING token`,
    [partition, token],
  );
  if (r.rows.length > 0) return true;
  const current = await pool.query<{ token: number }>('SELECT token FROM partition_fences WHERE partition = $1', [partition]);
  return current.rows[0]?.token === token;
}

/** Queues the fence check on the transaction's connection (pipelined with what follows); its promise rejects when fenced. */
export function checkFence(client: PoolClient, fence: Fence): Promise<unknown> {
  return client.query({ name: 'agentd_check_fence', text: 'SELECT agentd_check_fence($1, $2)', values: [fence.partition, fence.token] });
}
