/**
 * What a schedule is: `create_schedule`'s arguments checked into the record
 * the store holds (exactly one of cron, every_ms, at), when its next tick is
 * due, and how it is shown on the wire.
 */
import { Cron } from 'croner';
import { AgentdError, Code } from '../../shared/errors.ts';
import type { CatchUp, ScheduleInfo } from '../../shared/wire/schedules.ts';
import type { ScheduleRecord } from '../../storage/schedule-calls.ts';
import type { OpArgs } from '../ops/op-args.ts';

/** The shortest period of an `every_ms` schedule. */
export const MIN_EVERY_MS = 1_000;
/** The longest: a year. */
const MAX_EVERY_MS = 366 * 24 * 3_600_000;
const NAME = /^[A-Za-z0-9_][A-Za-z0-9._:-]{0,127}$/;
/** RFC 3339 with a time zone offset (Z or ±hh:mm). */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const OP = 'create_schedule';

function bad(message: string): AgentdError {
  return new AgentdError(Code.BadRequest, `${OP}.${message}`);
}

export function checkName(op: string, name: string): string {
  if (!NAME.test(name)) throw new AgentdError(Code.BadRequest, `${op}.name must be 1-128 letters, digits, "_", ".", ":" or "-", not starting with "." ":" or "-"; got ${JSON.stringify(name.slice(0, 140))}`);
  return name;
}

function checkTimezone(tz: string): string {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
  } catch {
    throw bad(`timezone ${JSON.stringify(tz)} is not an IANA time zone (such as "Europe/Berlin" or "UTC")`);
  }
  return tz;
}

function cronOf(expr: string, timezone: string | null): Cron {
  return new Cron(expr, { timezone: timezone ?? undefined, paused: true });
}

function checkCron(expr: string, timezone: string | null, now: number): void {
  const fields = expr.trim().split(/\s+/).length;
  if (fields !== 5 && fields !== 6) throw bad(`cron must have 5 fields (minute hour day month weekday) or 6 (seconds first), got ${fields}: ${JSON.stringify(expr)}`);
  let next: Date | null;
  try {
    next = cronOf(expr, timezone).nextRun(new Date(now));
  } catch (err) {
    throw bad(`cron ${JSON.stringify(expr)} is not a valid cron expression: ${(err as Error).message}`);
  }
  if (next === null) throw bad(`cron ${JSON.stringify(expr)} never fires`);
}

function checkAt(at: string, now: number): number {
  const ms = RFC3339.test(at) ? Date.parse(at) : NaN;
  if (Number.isNaN(ms)) throw bad(`at must be an RFC 3339 time with a zone, such as "2026-12-01T09:00:00Z"; got ${JSON.stringify(at.slice(0, 64))}`);
  if (ms <= now) throw bad(`at ${at} is in the past`);
  return ms;
}

/** `create_schedule`'s arguments as the record to store, its first tick computed; 400 naming the field when bad. */
export function scheduleFromArgs(args: OpArgs<'create_schedule'>, now: number): ScheduleRecord {
  const name = checkName(OP, args.nonEmptyStr('name'));
  const source = args.name('source');
  const raw = args.raw('payload');
  const cron = args.optStr('cron');
  const everyMs = args.optUint('every_ms') ?? null;
  const at = args.optStr('at');
  const given = [cron !== null && 'cron', everyMs !== null && 'every_ms', at !== null && 'at'].filter((g) => g !== false);
  if (given.length !== 1) throw new AgentdError(Code.BadRequest, `${OP} needs exactly one of cron, every_ms, at; got ${given.length === 0 ? 'none' : given.join(' and ')}`);
  const tz = args.optStr('timezone');
  if (tz !== null && cron === null) throw bad('timezone applies to cron schedules only');
  const timezone = tz === null ? null : checkTimezone(tz);
  if (everyMs !== null && (everyMs < MIN_EVERY_MS || everyMs > MAX_EVERY_MS)) throw bad(`every_ms must be from ${MIN_EVERY_MS} (one second) to ${MAX_EVERY_MS}, got ${everyMs}`);
  if (cron !== null) checkCron(cron, timezone, now);
  const catchUp: CatchUp = args.optEnum('catch_up', ['none', 'one']) ?? 'none';
  const record: ScheduleRecord = {
    name, source, payload: JSON.stringify(raw ?? ''), cron, every_ms: everyMs, at: at === null ? null : checkAt(at, now), timezone,
    catch_up: catchUp, created_at: now, next_at: null, fires: 0, last_fired_at: null, claim_until: null,
  };
  record.next_at = nextTick(record, now);
  return record;
}

/** The first tick strictly after `after`; null when there is none (a one-shot whose time has passed). */
export function nextTick(r: ScheduleRecord, after: number): number | null {
  if (r.every_ms !== null) return r.created_at + (Math.floor((after - r.created_at) / r.every_ms) + 1) * r.every_ms;
  if (r.at !== null) return r.at > after ? r.at : null;
  return cronOf(r.cron!, r.timezone).nextRun(new Date(after))?.getTime() ?? null;
}

/** The text a fire publishes: a string payload as it is, anything else as its JSON text (as `publish_event`). */
export function payloadText(r: ScheduleRecord): string {
  const value: unknown = JSON.parse(r.payload);
  return typeof value === 'string' ? value : JSON.stringify(value);
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function scheduleInfo(r: ScheduleRecord): ScheduleInfo {
  return {
    name: r.name, source: r.source, payload: JSON.parse(r.payload) as unknown, cron: r.cron, every_ms: r.every_ms, at: iso(r.at), timezone: r.timezone,
    catch_up: r.catch_up, next_at: iso(r.next_at), last_fired_at: iso(r.last_fired_at), fires: r.fires, created_at: new Date(r.created_at).toISOString(),
  };
}
