import type { Empty } from './common.ts';

export type CatchUp = 'none' | 'one';

export interface CreateScheduleArgs {
  name: string;
  source: string;
  /** Published as a client's `publish_event` payload would be: a string as it is, anything else as its JSON text. */
  payload?: unknown;
  cron?: string;
  every_ms?: number;
  at?: string;
  timezone?: string;
  catch_up?: CatchUp;
}

export interface ScheduleInfo {
  name: string;
  source: string;
  payload: unknown;
  /** Exactly one of `cron`, `every_ms`, `at` is non-null. */
  cron: string | null;
  every_ms: number | null;
  at: string | null;
  timezone: string | null;
  catch_up: CatchUp;
  /** RFC 3339: the next tick; null once a one-shot has fired. */
  next_at: string | null;
  last_fired_at: string | null;
  /** Ticks fired, over the cluster, since the schedule was created. */
  fires: number;
  created_at: string;
}

export interface ScheduleOperations {
  create_schedule: { args: CreateScheduleArgs; variant: 'schedule'; reply: ScheduleInfo };
  list_schedules: { args: Empty; variant: 'schedule_list'; reply: { schedules: ScheduleInfo[] } };
  delete_schedule: { args: { name: string }; variant: 'pong'; reply: Empty };
}
