/** Webhooks and their outbox as SQLite runs them (storage/webhook-calls.ts says what each call means). */
import type { Db } from './db.ts';
import { insertNamed, preparedOnce } from './named-rows.ts';
import type { AttemptResult, DeliveryRecord, NewDelivery, WebhookCall, WebhookRecord } from '../webhook-calls.ts';

const HOOK = 'name, url, events, agents, secret, max_attempts, created_at';
const DELIVERY = 'seq, id, webhook, conv, kind, agent, sender, body, status, attempts, last_error, created_at, next_attempt_at, finished_at';
/** The oldest pending delivery of its (webhook, conversation), due, and claimed by no one (or a claim that lapsed). */
const DUE = `status = 'pending' AND next_attempt_at <= @now AND (claim_until IS NULL OR claim_until < @now)
  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.webhook = d.webhook AND e.conv = d.conv AND e.status = 'pending' AND e.seq < d.seq)`;

function statements(db: Db) {
  return {
    get: db.prepare<[string], { name: string }>('SELECT name FROM webhooks WHERE name = ?'),
    count: db.prepare<[], { n: number }>('SELECT count(*) AS n FROM webhooks'),
    insert: db.prepare<Record<string, unknown>>(`INSERT INTO webhooks (${HOOK}) VALUES (@name, @url, @events, @agents, @secret, @max_attempts, @created_at)`),
    delete: db.prepare<[string]>('DELETE FROM webhooks WHERE name = ?'),
    deleteDeliveries: db.prepare<[string]>('DELETE FROM webhook_deliveries WHERE webhook = ?'),
    list: db.prepare<[], WebhookRecord>(`SELECT ${HOOK} FROM webhooks ORDER BY name`),
    pending: db.prepare<[], { n: number }>("SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'"),
    enqueue: db.prepare<Record<string, unknown>>(
      `INSERT INTO webhook_deliveries (id, webhook, conv, kind, agent, sender, body, status, created_at, next_attempt_at)
       VALUES (@id, @webhook, @conv, @kind, @agent, @sender, @body, 'pending', @created_at, @created_at)`,
    ),
    due: db.prepare<Record<string, unknown>, DeliveryRecord>(`SELECT ${DELIVERY} FROM webhook_deliveries d WHERE ${DUE} ORDER BY seq LIMIT @limit`),
    claim: db.prepare<[string, number, string]>('UPDATE webhook_deliveries SET claim_node = ?, claim_until = ? WHERE id = ?'),
    attempted: db.prepare<Record<string, unknown>>(
      `UPDATE webhook_deliveries SET status = @status, attempts = @attempts, last_error = @last_error, next_attempt_at = @next_attempt_at,
       finished_at = @finished_at, claim_node = NULL, claim_until = NULL WHERE id = @id AND claim_node = @node`,
    ),
    release: db.prepare<[string]>("UPDATE webhook_deliveries SET claim_node = NULL, claim_until = NULL WHERE claim_node = ? AND status = 'pending'"),
    deliveries: db.prepare<[string, string | null, string | null, number], DeliveryRecord>(
      `SELECT ${DELIVERY} FROM webhook_deliveries WHERE webhook = ? AND (? IS NULL OR status = ?) ORDER BY seq DESC LIMIT ?`,
    ),
    prune: db.prepare<[number]>(`DELETE FROM webhook_deliveries WHERE status != 'pending' AND seq IN (
      SELECT seq FROM (SELECT seq, row_number() OVER (PARTITION BY webhook ORDER BY seq DESC) AS n FROM webhook_deliveries WHERE status != 'pending') WHERE n > ?)`),
  };
}

const prepared = new WeakMap<Db, ReturnType<typeof statements>>();

/** Runs one webhook call; the caller holds the write lock. */
export function runWebhookCall(db: Db, c: WebhookCall): unknown {
  const s = preparedOnce(prepared, db, statements);
  switch (c.call) {
    case 'insert':
      return insertNamed(db, s, c.record, c.max);
    case 'delete':
      return db.transaction(() => (s.deleteDeliveries.run(c.name), s.delete.run(c.name).changes === 1)).immediate();
    case 'list':
      return s.list.all();
    case 'enqueue':
      return db.transaction((deliveries: NewDelivery[]) => {
        const room = Math.max(0, Math.min(deliveries.length, c.max - s.pending.get()!.n));
        for (const d of deliveries.slice(0, room)) s.enqueue.run({ ...d });
        return room;
      }).immediate(c.deliveries);
    case 'claim_due':
      return db.transaction(() => {
        const rows = s.due.all({ now: c.now, limit: c.limit });
        for (const r of rows) s.claim.run(c.node, c.until, r.id);
        return rows;
      }).immediate();
    case 'attempted':
      return s.attempted.run({ id: c.id, node: c.node, ...(c.result satisfies AttemptResult) }).changes === 1;
    case 'release':
      return s.release.run(c.node).changes;
    case 'deliveries':
      return s.deliveries.all(c.webhook, c.status, c.status, c.limit);
    case 'prune':
      return s.prune.run(c.keep).changes;
  }
}
