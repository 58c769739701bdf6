/**
 * Cluster fencing in the PostgreSQL store. A node that wins a partition in
 * the cluster's NATS bucket claims it here before serving it (`claimFence`)
 * and serves with the token the store answers; every write for a pair of
 * that partition runs `agentd_check_fence` (schema.ts step 2) in its own
 * transaction, which refuses any token but the current one. A claim waits
 * for the writes holding the fence row to end, so once a newer token is
 * claimed no write of an older owner can commit.
 *
 * The store issues the tokens: a claim that wins gets one more than the
 * partition's last, so tokens only grow, whatever happened to the bucket
 * (NATS lost its store, the cluster was renamed: bucket revisions start
 * again at 1). Claims are ordered by (epoch, revision): the revision of the
 * bucket entry that gave the node the partition, and the epoch the bucket
 * carries, which this store issued to it (`bucketEpoch`). A bucket made
 * later gets a later epoch, so a claim from a bucket that is gone, however
 * late it arrives, never takes a fence from one made since.
 */
import type pg from 'pg';
import type { Fence } from '../../shared/partitions.ts';
import type { PoolClient } from './pool.ts';

/** The SQLSTATE agentd_check_fence raises. */
export const FENCED_SQLSTATE = 'AGF01';

/**
 * Claims the partition for the owner its bucket entry at (`epoch`,
 * `revision`) names. The token to serve it with, or null when a claim as new
 * or newer holds the fence (this node must not serve the partition). The
 * same claim made again answers the same token.
 */
export async function claimFence(pool: pg.Pool, partition: number, epoch: number, revision: number): Promise<number | null> {
  const r = await pool.query<{ token: number }>(
    `INSERT INTO partition_fences (partition, token, epoch, revision) VALUES ($1, 1, $2, $3)
     ON CONFLICT (partition) DO UPDATE SET token = partition_fences.token + 1, epoch = EXCLUDED.epoch, revision = EXCLUDED.revision
       WHERE (partition_fences.epoch, partition_fences.revision) < (EXCLUDED.epoch, EXCLUDED.revision)
     RETURNING token`,
    [partition, epoch, revision],
  );
  if (r.rows.length > 0) return r.rows[0]!.token;
  const same = await pool.query<{ token: number }>('SELECT token FROM partition_fences WHERE partition = $1 AND epoch = $2 AND revision = $3', [partition, epoch, revision]);
  return same.rows[0]?.token ?? null;
}

/**
 * The epoch a cluster's bucket is to carry, given the one it carries
 * (`current`, null for none): that one while no claim carries a later one,
 * else a new one, later than any issued. A bucket found with an earlier
 * epoch than the fences hold (a cluster renamed back to a name whose bucket
 * NATS kept) gets a new one, or its claims would never win.
 */
export async function bucketEpoch(pool: pg.Pool, current: number | null): Promise<number> {
  if (current !== null) {
    const latest = await pool.query<{ epoch: number }>('SELECT coalesce(max(epoch), 0)::bigint AS epoch FROM partition_fences');
    if (current >= latest.rows[0]!.epoch) return current;
  }
  const issued = await pool.query<{ epoch: number }>("SELECT nextval('agentd_cluster_epochs') AS epoch");
  return issued.rows[0]!.epoch;
}

/** Queues the fence check on the transaction's connection (pipelined with what follows); its promise rejects when fenced. */
export function checkFence(client: PoolClient, fence: Fence): Promise<unknown> {
  return client.query({ name: 'agentd_check_fence', text: 'SELECT agentd_check_fence($1, $2)', values: [fence.partition, fence.token] });
}
