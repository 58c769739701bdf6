/** The live view's turn figures: per-second buckets in a ring, latency quantiles, failures per agent and the bounded error ring. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_ERRORS, SECONDS, TurnRates } from '../../src/main/dashboard/turn-rates.ts';
import type { OpenTurn, TurnMeterSink } from '../../src/main/turn-ledger.ts';
import { outcomeCode, type TurnRequest } from '../../src/shared/threads/shard-messages.ts';
import { createLogger } from '../../src/shared/log.ts';

const T0 = Date.UTC(2026, 11, 2, 17, 0, 0);
const sec = (ms: number): number => Math.floor(ms / 1000);

/** A turn that reached main `ageMs` ago. */
function turn(agent: string, ageMs: number, extra: Partial<OpenTurn> = {}): OpenTurn {
  const req = { agent, sender: 'alice', guest: null } as unknown as TurnRequest;
  return { seq: 1, shard: 0, req, started: true, openedAt: performance.now() - ageMs, startedAt: 0, ...extra };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('TurnRates', () => {
  it('counts turns per second and their latency quantiles, and hands each turn on', () => {
    vi.useFakeTimers({ toFake: ['Date'], now: T0 });
    const seen: number[] = [];
    const next: TurnMeterSink = { turnEnded: (_t, outcome) => seen.push(outcome) };
    const r = new TurnRates(next);
    for (let i = 0; i < 98; i++) r.turnEnded(turn('a', 10), outcomeCode('text'));
    r.turnEnded(turn('a', 1000), outcomeCode('text'));
    r.turnEnded(turn('a', 1000), outcomeCode('text'));
    expect(seen).toHaveLength(100);
    const last = r.series(sec(T0)).at(-1)!;
    expect(last.turns).toBe(100);
    // Each quantile is its bucket's upper bound: buckets are 25 % wide.
    expect(last.p50_ms).toBeGreaterThanOrEqual(10);
    expect(last.p50_ms).toBeLessThan(12.5);
    expect(last.p99_ms).toBeGreaterThanOrEqual(1000);
    expect(last.p99_ms).toBeLessThan(1250);
    expect(r.latency(sec(T0), 60)).toEqual({ p50_ms: last.p50_ms, p99_ms: last.p99_ms });
    // The current second is still filling: the rate counts whole seconds before it.
    expect(r.rate(sec(T0), 10)).toBe(0);
    expect(r.rate(sec(T0) + 1, 10)).toBe(10);
  });

  it('keeps the last SECONDS seconds in a ring: older ones read as empty, never as the newer', () => {
    vi.useFakeTimers({ toFake: ['Date'], now: T0 });
    const r = new TurnRates(null);
    r.turnEnded(turn('a', 1), outcomeCode('text'));
    vi.setSystemTime(T0 + 5_000);
    r.turnEnded(turn('a', 1), outcomeCode('text'));
    r.turnEnded(turn('a', 1), outcomeCode('text'));
    let series = r.series(sec(T0) + 5);
    expect(series).toHaveLength(SECONDS);
    expect(series.map((s) => s.t)).toEqual(Array.from({ length: SECONDS }, (_, i) => sec(T0) + 5 - SECONDS + 1 + i));
    expect(series.filter((s) => s.turns > 0).map((s) => [s.t - sec(T0), s.turns])).toEqual([[0, 1], [5, 2]]);
    // A whole ring later the same slot holds a new second: the old counts are gone.
    vi.setSystemTime(T0 + SECONDS * 1000);
    r.turnEnded(turn('a', 1), outcomeCode('text'));
    series = r.series(sec(T0) + SECONDS);
    expect(series.filter((s) => s.turns > 0).map((s) => [s.t - sec(T0), s.turns])).toEqual([[5, 2], [SECONDS, 1]]);
    expect(r.latency(sec(T0) + SECONDS + 120, 60)).toEqual({ p50_ms: 0, p99_ms: 0 });
    expect(r.totals).toEqual({ turns: 4, errors: 0 });
  });

  it('remembers failed turns per agent, newest first, at most MAX_ERRORS, with their own message', () => {
    vi.useFakeTimers({ toFake: ['Date'], now: T0 });
    const r = new TurnRates(null);
    r.turnEnded(turn('ok', 1), outcomeCode('text'));
    r.turnEnded(turn('ok', 1), outcomeCode('cancelled'));
    r.turnEnded(turn('bad', 1, { error: { code: 500, message: 'provider said no' } }), outcomeCode('error'));
    r.turnEnded(turn('gone', 1), outcomeCode('lost'));
    expect(r.agent('ok')).toEqual({ turns: 2, errors: 0 });
    expect(r.agent('bad')).toEqual({ turns: 1, errors: 1 });
    expect(r.agent('never')).toEqual({ turns: 0, errors: 0 });
    expect(r.recentErrors()).toEqual([
      { time: new Date(T0).toISOString(), agent: 'gone', sender: 'alice', code: 'lost', message: 'lost with its shard (crashed or stalled)' },
      { time: new Date(T0).toISOString(), agent: 'bad', sender: 'alice', code: 'error 500', message: 'provider said no' },
    ]);
    for (let i = 0; i < MAX_ERRORS + 5; i++) r.turnEnded(turn(`n${i}`, 1, { error: { code: 404, message: 'x'.repeat(10_000) } }), outcomeCode('refused'));
    const recent = r.recentErrors();
    expect(recent).toHaveLength(MAX_ERRORS);
    expect(recent[0]!.agent).toBe(`n${MAX_ERRORS + 4}`);
    expect(recent.at(-1)!.agent).toBe('n5');
    expect(recent[0]!.message.length).toBeLessThanOrEqual(500);
    expect(r.series(sec(T0)).at(-1)!.errors).toBe(2 + MAX_ERRORS + 5);
    expect(r.totals).toEqual({ turns: 4 + MAX_ERRORS + 5, errors: 2 + MAX_ERRORS + 5 });
  });

  it('forgets deleted agents\' counts', () => {
    const r = new TurnRates(null);
    r.turnEnded(turn('kept', 1), outcomeCode('text'));
    r.turnEnded(turn('deleted', 1), outcomeCode('text'));
    r.keepAgents(new Set(['kept']));
    expect(r.agent('kept').turns).toBe(1);
    expect(r.agent('deleted').turns).toBe(0);
    expect(r.totals.turns).toBe(2);
  });

  it('counts a guest\'s turn for the guest', () => {
    const r = new TurnRates(null);
    r.turnEnded({ ...turn('host', 1), req: { agent: 'host', sender: 's', guest: 'helper' } as unknown as TurnRequest }, outcomeCode('text'));
    expect(r.agent('helper').turns).toBe(1);
    expect(r.agent('host').turns).toBe(0);
  });

  it('keeps main\'s warnings and errors beside the failed turns, as written: scrubbed, and only those written', () => {
    const r = new TurnRates(null);
    const log = createLogger('error', { thread: 'test' }, (level, message, fields) => r.logged(level, message, fields));
    log.warn({ agent: 'a' }, 'below the level: not written, not kept');
    log.error({ agent: 'a', sender: 's', token: 'hunter2' }, 'a shard was replaced');
    log.error(new Error('boom: Authorization: Bearer abc.def.ghi'), 'the writer failed');
    const [writer, shard, ...rest] = r.recentErrors();
    expect(rest).toEqual([]);
    expect(shard).toMatchObject({ agent: 'a', sender: 's', code: 'log error', message: 'a shard was replaced' });
    expect(writer).toMatchObject({ agent: '', sender: '', code: 'log error' });
    expect(writer!.message).toMatch(/^the writer failed: boom/);
    expect(writer!.message).not.toContain('abc.def.ghi');
    expect(r.totals).toEqual({ turns: 0, errors: 0 });
  });
});
