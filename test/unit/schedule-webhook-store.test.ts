/**
 * The store's side of schedules and webhooks, the same tests on SQLite and
 * PostgreSQL: a tick's claim holds against other nodes until it lapses, only
 * its holder records the fire; the outbox hands out only the oldest pending
 * delivery of each (webhook, conversation), claims it against other loops,
 * and keeps its cap. Times are passed in, so a lapse needs no waiting.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWriteLockBuffer, WriteLock } from '../../src/storage/sqlite/write-lock.ts';
import { SqliteDaemonStorage } from '../../src/storage/sqlite/daemon-store.ts';
import { createPgDaemonStorage } from '../../src/storage/postgres/store.ts';
import { createLogger } from '../../src/shared/log.ts';
import type { DaemonStorage } from '../../src/storage/contract.ts';
import type { ScheduleCall, ScheduleRecord } from '../../src/storage/schedule-calls.ts';
import type { DeliveryRecord, NewDelivery, WebhookCall } from '../../src/storage/webhook-calls.ts';
import { createTestDatabase, needPostgres } from '../helpers/postgres.ts';

const log = createLogger('silent');
const pgSkip = await needPostgres();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

const backends: { name: string; skip: string | null; open(): Promise<DaemonStorage> }[] = [
  {
    name: 'SQLite',
    skip: null,
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'agentd-sched-store-'));
      const s = new SqliteDaemonStorage(join(dir, 'agentd.db'), new WriteLock(createWriteLockBuffer(), 1));
      await s.prepare({});
      closers.push(async () => (await s.close(), rmSync(dir, { recursive: true, force: true })));
      return s;
    },
  },
  {
    name: 'PostgreSQL',
    skip: pgSkip,
    async open() {
      const s = await createPgDaemonStorage((await createTestDatabase()).url, log);
      await s.prepare({});
      closers.push(() => s.close());
      return s;
    },
  },
];

const T = 1_800_000_000_000;
const record: ScheduleRecord = { name: 'tick', source: 'src', payload: '""', cron: null, every_ms: 1000, at: null, timezone: null, catch_up: 'none', created_at: T - 1000, next_at: T, fires: 0, last_fired_at: null, claim_until: null };

function delivery(id: string, conv: string): NewDelivery {
  return { id, webhook: 'w', conv, kind: 'turn_end', agent: 'a', sender: conv, body: '{}', created_at: T };
}

for (const b of backends) {
  describe.skipIf(b.skip !== null)(`${b.name}${b.skip === null ? '' : ` (skipped: ${b.skip})`}`, () => {
    it('a schedule tick is claimed once, lapses to another node, and only the holder records the fire', async () => {
      const s = await b.open();
      const call = <R>(c: ScheduleCall): Promise<R> => s.schedules!(c) as Promise<R>;
      expect(await call({ call: 'insert', record, max: 10 })).toBe('ok');
      expect(await call({ call: 'insert', record, max: 10 })).toBe('exists');
      expect(await call({ call: 'insert', record: { ...record, name: 'other' }, max: 1 })).toBe('full');
      expect(await call({ call: 'claim', name: 'tick', due: T, now: T, until: T + 5000, node: 'a' })).toBe(true);
      expect(await call({ call: 'claim', name: 'tick', due: T, now: T + 10, until: T + 5010, node: 'b' })).toBe(false);
      // a died holding it: once the claim lapses, b takes the tick; a's late record is refused.
      expect(await call({ call: 'claim', name: 'tick', due: T, now: T + 5001, until: T + 10_001, node: 'b' })).toBe(true);
      expect(await call({ call: 'fired', name: 'tick', due: T, next: T + 1000, node: 'a' })).toBe(false);
      expect(await call({ call: 'fired', name: 'tick', due: T, next: T + 1000, node: 'b' })).toBe(true);
      expect(await call({ call: 'fired', name: 'tick', due: T, next: T + 1000, node: 'b' })).toBe(false);
      expect(await call({ call: 'get', name: 'tick' })).toMatchObject({ next_at: T + 1000, fires: 1, last_fired_at: T, claim_until: null });
      expect(await call({ call: 'skip', name: 'tick', due: T + 1000, next: T + 3000 })).toBe(true);
      expect(await call({ call: 'list' })).toEqual([{ ...record, next_at: T + 3000, fires: 1, last_fired_at: T }]);
      expect(await call({ call: 'delete', name: 'tick' })).toBe(true);
      expect(await call({ call: 'get', name: 'tick' })).toBeNull();
    });

    it('the outbox hands out each conversation\'s oldest pending delivery, once, and keeps its cap', async () => {
      const s = await b.open();
      const call = <R>(c: WebhookCall): Promise<R> => s.webhooks!(c) as Promise<R>;
      expect(await call({ call: 'insert', record: { name: 'w', url: 'http://x/', events: '["turn_end"]', agents: null, secret: 's'.repeat(16), max_attempts: 8, created_at: T }, max: 5 })).toBe('ok');
      expect(await call({ call: 'enqueue', deliveries: [delivery('1', 'x'), delivery('2', 'y'), delivery('3', 'x')], max: 4 })).toBe(3);
      expect(await call({ call: 'enqueue', deliveries: [delivery('4', 'y'), delivery('5', 'y')], max: 4 })).toBe(1);
      const first = await call<DeliveryRecord[]>({ call: 'claim_due', now: T, until: T + 1000, node: 'a', limit: 10 });
      expect(first.map((d) => d.id)).toEqual(['1', '2']);
      expect(await call<DeliveryRecord[]>({ call: 'claim_due', now: T + 1, until: T + 1001, node: 'b', limit: 10 })).toEqual([]);
      // 1 delivered: 3 is next for x; 2 waits for a retry, holding back 4 behind it.
      expect(await call({ call: 'attempted', id: '1', node: 'a', result: { status: 'delivered', attempts: 1, last_error: '', next_attempt_at: null, finished_at: T } })).toBe(true);
      expect(await call({ call: 'attempted', id: '2', node: 'a', result: { status: 'pending', attempts: 1, last_error: 'HTTP 503', next_attempt_at: T + 500, finished_at: null } })).toBe(true);
      expect((await call<DeliveryRecord[]>({ call: 'claim_due', now: T + 2, until: T + 1002, node: 'b', limit: 10 })).map((d) => d.id)).toEqual(['3']);
      expect((await call<DeliveryRecord[]>({ call: 'claim_due', now: T + 500, until: T + 1500, node: 'b', limit: 10 })).map((d) => d.id)).toEqual(['2']);
      // b dies holding 2 and 3; after the claims lapse, a gets them back.
      expect((await call<DeliveryRecord[]>({ call: 'claim_due', now: T + 1501, until: T + 2500, node: 'a', limit: 10 })).map((d) => d.id)).toEqual(['2', '3']);
      expect(await call({ call: 'attempted', id: '3', node: 'b', result: { status: 'delivered', attempts: 1, last_error: '', next_attempt_at: null, finished_at: T } })).toBe(false);
      const listed = await call<DeliveryRecord[]>({ call: 'deliveries', webhook: 'w', status: null, limit: 10 });
      expect(listed.map((d) => [d.id, d.status])).toEqual([['4', 'pending'], ['3', 'pending'], ['2', 'pending'], ['1', 'delivered']]);
      expect(await call({ call: 'delete', name: 'w' })).toBe(true);
      expect(await call<DeliveryRecord[]>({ call: 'deliveries', webhook: 'w', status: null, limit: 10 })).toEqual([]);
    });
  });
}
