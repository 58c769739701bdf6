/** The schedule engine's claims (main/schedules/): of several engines on one store, one fires each tick, and a claim whose holder died lapses to another. */
import { describe, expect, it } from 'vitest';
import { ScheduleEngine, tickKey } from '../../src/main/schedules/schedule-engine.ts';
import { MemorySchedules, type ScheduleStore } from '../../src/main/schedules/schedule-store.ts';
import type { ScheduleRecord } from '../../src/storage/schedule-calls.ts';
import { createLogger } from '../../src/shared/log.ts';
import { waitFor } from '../helpers/daemon.ts';

function oneShot(name: string, at: number): ScheduleRecord {
  return { name, source: 'src', payload: JSON.stringify(name), cron: null, every_ms: null, at, timezone: null, catch_up: 'none', created_at: Date.now(), next_at: at, fires: 0, last_fired_at: null, claim_until: null };
}

function engine(store: ScheduleStore, node: string, publish: (source: string, payload: string) => Promise<number>, leaseMs = 300): ScheduleEngine {
  return new ScheduleEngine({ store, publish, log: createLogger('silent'), node, leaseMs, reloadMs: 50, missedAfterMs: leaseMs, maxSchedules: 100 });
}

describe('schedule engine', () => {
  it('three engines on one store fire each one-shot exactly once', async () => {
    const store = new MemorySchedules();
    const fired: string[] = [];
    const engines = ['a', 'b', 'c'].map((n) => engine(store, n, async (_s, p) => (fired.push(`${n}:${p}`), 1)));
    const at = Date.now() + 200;
    for (let i = 0; i < 5; i++) await engines[i % 3]!.create(oneShot(`s${i}`, at + i * 20));
    for (const e of engines) await e.start();
    await waitFor(async () => (await store.call<ScheduleRecord[]>({ call: 'list' })).length === 0, 'every one-shot to fire');
    for (const e of engines) e.stop();
    expect(fired.map((f) => f.split(':')[1]).sort()).toEqual(['"s0"', '"s1"', '"s2"', '"s3"', '"s4"'].map((s) => JSON.parse(s) as string));
  });

  it('a tick claimed by an engine that dies before firing is fired by another once the claim lapses', async () => {
    const store = new MemorySchedules();
    const fired: string[] = [];
    let claimedByDying = false;
    // "dying" claims every tick it can and never gets to publish: as a node killed right after its claim.
    const dying = engine(store, 'dying', () => {
      claimedByDying = true;
      return new Promise<number>(() => undefined);
    });
    await dying.create(oneShot('t', Date.now() + 100));
    await dying.start();
    await waitFor(() => claimedByDying, 'the dying engine to claim the tick');
    dying.stop();
    const survivor = engine(store, 'survivor', async (_s, p) => (fired.push(p), 1));
    await survivor.start();
    await waitFor(() => fired.length === 1, 'the survivor to fire the tick');
    expect(fired).toEqual(['t']);
    await waitFor(async () => (await store.call<ScheduleRecord[]>({ call: 'list' })).length === 0, 'the fired one-shot to go');
    survivor.stop();
  });
});

describe('tickKey', () => {
  it('is one short key per schedule incarnation and due time, within a turn id once a subscription id follows', () => {
    const r = { name: 'n'.repeat(64), created_at: 1_700_000_000_000 };
    const key = tickKey(r, 1_700_000_060_000);
    expect(key).toBe(tickKey({ ...r }, 1_700_000_060_000));
    expect(key).not.toBe(tickKey(r, 1_700_000_120_000));
    expect(key).not.toBe(tickKey({ ...r, created_at: r.created_at + 1 }, 1_700_000_060_000));
    expect(Buffer.byteLength(`${key}:4294967295`)).toBeLessThanOrEqual(64);
  });
});
