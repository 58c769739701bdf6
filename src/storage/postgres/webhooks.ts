/** Webhooks and their outbox as PostgreSQL runs them (storage/webhook-calls.ts says what each call means). */
import type pg from 'pg';
import type { InsertResult } from '../schedule-calls.ts';
import type { DeliveryRecord, WebhookCall, WebhookRecord } from '../webhook-calls.ts';
import { inTransaction } from './pool.ts';

const HOOK = 'name, url, events, agents, secret, max_attempts, created_at';
const DELIVERY = 'seq, id, webhook, conv, kind, agent, sender, body, status, attempts, last_error, created_at, next_attempt_at, finished_at';
/** Several nodes creating webhooks or filling the outbox at once: the lock keeps each count and its inserts together. */
const HOOKS_LOCK = 0x77656268;
const OUTBOX_LOCK = 0x77656269;

const n = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

function delivery(row: Record<string, unknown>): DeliveryRecord {
  return { ...(row as unknown as DeliveryRecord), seq: Number(row.seq), attempts: Number(row.attempts), created_at: Number(row.created_at), next_attempt_at: n(row.next_attempt_at), finished_at: n(row.finished_at) };
}

function hook(row: Record<string, unknown>): WebhookRecord {
  return { ...(row as unknown as WebhookRecord), max_attempts: Number(row.max_attempts), created_at: Number(row.created_at) };
}

export async function runPgWebhookCall(pool: pg.Pool, c: WebhookCall): Promise<unknown> {
  switch (c.call) {
    case 'insert':
      return inTransaction(pool, async (client): Promise<InsertResult> => {
        await client.query('SELECT pg_advisory_xact_lock($1)', [HOOKS_LOCK]);
        if ((await client.query('SELECT 1 FROM webhooks WHERE name = $1', [c.record.name])).rowCount !== 0) return 'exists';
        if (Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM webhooks')).rows[0]!.n) >= c.max) return 'full';
        const r = c.record;
        await client.query(`INSERT INTO webhooks (${HOOK}) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [r.name, r.url, r.events, r.agents, r.secret, r.max_attempts, r.created_at]);
        return 'ok';
      });
    case 'delete':
      return inTransaction(pool, async (client) => {
        await client.query('DELETE FROM webhook_deliveries WHERE webhook = $1', [c.name]);
        return (await client.query('DELETE FROM webhooks WHERE name = $1', [c.name])).rowCount === 1;
      });
    case 'list':
      return (await pool.query(`SELECT ${HOOK} FROM webhooks ORDER BY name`)).rows.map(hook);
    case 'enqueue':
      return inTransaction(pool, async (client) => {
        await client.query('SELECT pg_advisory_xact_lock($1)', [OUTBOX_LOCK]);
        const pending = Number((await client.query<{ n: string }>("SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'")).rows[0]!.n);
        const room = Math.max(0, Math.min(c.deliveries.length, c.max - pending));
        for (const d of c.deliveries.slice(0, room)) {
          await client.query(
            `INSERT INTO webhook_deliveries (id, webhook, conv, kind, agent, sender, body, status, created_at, next_attempt_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $8)`,
            [d.id, d.webhook, d.conv, d.kind, d.agent, d.sender, d.body, d.created_at],
          );
        }
        return room;
      });
    case 'claim_due': {
      const r = await pool.query(
        `WITH due AS (
           SELECT id FROM webhook_deliveries d
           WHERE status = 'pending' AND next_attempt_at <= $1 AND (claim_until IS NULL OR claim_until < $1)
             AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.webhook = d.webhook AND e.conv = d.conv AND e.status = 'pending' AND e.seq < d.seq)
           ORDER BY seq LIMIT $4 FOR UPDATE SKIP LOCKED)
         UPDATE webhook_deliveries w SET claim_node = $3, claim_until = $2 FROM due WHERE w.id = due.id
         RETURNING ${DELIVERY.split(', ').map((col) => `w.${col}`).join(', ')}`,
        [c.now, c.until, c.node, c.limit],
      );
      return r.rows.map(delivery).sort((a, b) => a.seq - b.seq);
    }
    case 'attempted': {
      const x = c.result;
      const r = await pool.query(
        `UPDATE webhook_deliveries SET status = $1, attempts = $2, last_error = $3, next_attempt_at = $4, finished_at = $5, claim_node = NULL, claim_until = NULL
         WHERE id = $6 AND claim_node = $7`,
        [x.status, x.attempts, x.last_error, x.next_attempt_at, x.finished_at, c.id, c.node],
      );
      return r.rowCount === 1;
    }
    case 'release':
      return (await pool.query("UPDATE webhook_deliveries SET claim_node = NULL, claim_until = NULL WHERE claim_node = $1 AND status = 'pending'", [c.node])).rowCount;
    case 'deliveries':
      return (await pool.query(`SELECT ${DELIVERY} FROM webhook_deliveries WHERE webhook = $1 AND ($2::text IS NULL OR status = $2) ORDER BY seq DESC LIMIT $3`, [c.webhook, c.status, c.limit])).rows.map(delivery);
    case 'prune':
      return (await pool.query(
        `DELETE FROM webhook_deliveries WHERE seq IN (
           SELECT seq FROM (SELECT seq, row_number() OVER (PARTITION BY webhook ORDER BY seq DESC) AS n FROM webhook_deliveries WHERE status != 'pending') f WHERE n > $1)`,
        [c.keep],
      )).rowCount;
  }
}
