/**
 * What the store holds of a schedule and the calls main makes on it (each
 * backend answers them in its own schedules.ts). Times are epoch
 * milliseconds. A tick is fired by whoever claims it: `claim` sets a lease
 * on the row while `next_at` still names the tick, `fired` moves `next_at`
 * on (or deletes a fired one-shot) only for the claim's holder, so of
 * several nodes exactly one fires each tick, and a holder that dies leaves
 * its claim to lapse for another to take.
 */
import type { CatchUp } from '../shared/wire/schedules.ts';

export interface ScheduleRecord {
  name: string;
  source: string;
  /** The payload as JSON text. */
  payload: string;
  cron: string | null;
  every_ms: number | null;
  at: number | null;
  timezone: string | null;
  catch_up: CatchUp;
  created_at: number;
  next_at: number | null;
  fires: number;
  last_fired_at: number | null;
  claim_until: number | null;
}

export type ScheduleCall =
  /** 'full' when the store already holds `max` schedules. */
  | { call: 'insert'; record: ScheduleRecord; max: number }
  | { call: 'delete'; name: string }
  | { call: 'list' }
  | { call: 'get'; name: string }
  /** Claims tick `due` until `until` unless another holds an unexpired claim; true if this call took it. */
  | { call: 'claim'; name: string; due: number; now: number; until: number; node: string }
  /** The claimed tick fired: `next_at` becomes `next` (null deletes the row), counted. */
  | { call: 'fired'; name: string; due: number; next: number | null; node: string }
  /** A tick missed while no node ran (catch_up "none"): `next_at` moves on without a fire (null deletes the row). */
  | { call: 'skip'; name: string; due: number; next: number | null };

export type InsertResult = 'ok' | 'exists' | 'full';
