/**
 * Schedules as an event source beside the bus table: one timer per schedule
 * for its next tick; at the tick, a claim in the store (so in a cluster one
 * node fires it), then a publish as if a client had sent `publish_event`.
 * A node that claimed a tick and died leaves the claim to lapse after
 * `leaseMs`; the other nodes, whose claims failed, look again until they can
 * take it, so the tick fires on one of them.
 */
import { AgentdError, Code } from '../../shared/errors.ts';
import type { Logger } from '../../shared/log.ts';
import type { InsertResult, ScheduleRecord } from '../../storage/schedule-calls.ts';
import { tooMany } from '../limits.ts';
import { nextTick, payloadText } from './schedule-spec.ts';
import type { ScheduleStore } from './schedule-store.ts';
import { createHash } from 'node:crypto';

export interface ScheduleEngineOptions {
  store: ScheduleStore;
  /** Publishes on the bus as a client would, under the tick's key (its fired turns are named by it); resolves with how many subscriptions fired. */
  publish(source: string, payload: string, key: string): Promise<number>;
  log: Logger;
  /** This node's name (claims carry it). */
  node: string;
  /** How long a claim holds a tick against other nodes. */
  leaseMs: number;
  /** Cluster mode: other nodes change the table too, so it is read again this often; null on one node. */
  reloadMs: number | null;
  /** A tick due longer than this before start was missed (no node ran then): catch_up decides whether it fires. */
  missedAfterMs: number;
  maxSchedules: number;
  /** Test only: told right after this node's claim took a tick, before it fires. */
  claimed?(name: string, due: number): void;
  /** Test only: called once a claimed tick is published, before the fire is recorded. */
  published?(name: string, due: number): Promise<void>;
}

/** After a failed claim (another node holds the tick), how soon to look at the row again. */
const RECHECK_MS = 250;
/** After a store failure, how soon to try the tick again. */
const RETRY_MS = 1_000;
/** setTimeout's longest delay; a later tick is waited for in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class ScheduleEngine {
  readonly #o: ScheduleEngineOptions;
  readonly #records = new Map<string, ScheduleRecord>();
  readonly #timers = new Map<string, NodeJS.Timeout>();
  /** Schedules whose tick is being claimed or fired here: a reload leaves them alone. */
  readonly #busy = new Set<string>();
  #reloader: NodeJS.Timeout | null = null;
  #stopped = false;

  constructor(opts: ScheduleEngineOptions) {
    this.#o = opts;
  }

  /** Loads the table; a tick missed while no node ran is skipped (catch_up "none") or fires once now ("one"). */
  async start(): Promise<void> {
    const startedAt = Date.now();
    for (const r of await this.#o.store.call<ScheduleRecord[]>({ call: 'list' })) {
      this.#records.set(r.name, r);
      if (r.next_at !== null && r.next_at < startedAt - this.#o.missedAfterMs && r.catch_up === 'none') await this.#skipMissed(r, startedAt);
      this.#arm(r.name);
    }
    if (this.#o.reloadMs !== null) {
      this.#reloader = setInterval(() => void this.#reload().catch((err: unknown) => this.#o.log.warn({ err }, 'reading schedules from the store failed')), this.#o.reloadMs);
      this.#reloader.unref();
    }
  }

  stop(): void {
    this.#stopped = true;
    if (this.#reloader !== null) clearInterval(this.#reloader);
    for (const t of this.#timers.values()) clearTimeout(t);
    this.#timers.clear();
  }

  /** 409 when the name is taken, 429 past max_schedules. */
  /** `reload_config`: a new `max_schedules`, for creates from now on. */
  setMaxSchedules(max: number): void {
    this.#o.maxSchedules = max;
  }

  async create(r: ScheduleRecord): Promise<ScheduleRecord> {
    const result = await this.#o.store.call<InsertResult>({ call: 'insert', record: r, max: this.#o.maxSchedules });
    if (result === 'exists') throw new AgentdError(Code.Conflict, `schedule "${r.name}" already exists`);
    if (result === 'full') throw tooMany('schedules', this.#o.maxSchedules, 'max_schedules');
    this.#records.set(r.name, r);
    this.#arm(r.name);
    return r;
  }

  /** False if the store holds no such schedule. */
  async delete(name: string): Promise<boolean> {
    this.#forget(name);
    return this.#o.store.call<boolean>({ call: 'delete', name });
  }

  /** As the store holds them now (their fire counts are the cluster's). */
  list(): Promise<ScheduleRecord[]> {
    return this.#o.store.call<ScheduleRecord[]>({ call: 'list' });
  }

  get size(): number {
    return this.#records.size;
  }

  #forget(name: string): void {
    clearTimeout(this.#timers.get(name));
    this.#timers.delete(name);
    this.#records.delete(name);
  }

  /** Sets the schedule's timer for `at` (default: its next tick). */
  #arm(name: string, at?: number): void {
    clearTimeout(this.#timers.get(name));
    this.#timers.delete(name);
    const r = this.#records.get(name);
    const when = at ?? r?.next_at ?? null;
    if (this.#stopped || r === undefined || when === null) return;
    const timer = setTimeout(() => void this.#tick(name), Math.min(Math.max(0, when - Date.now()), MAX_TIMER_MS));
    timer.unref();
    this.#timers.set(name, timer);
  }

  async #tick(name: string): Promise<void> {
    const r = this.#records.get(name);
    if (r === undefined || r.next_at === null || this.#stopped) return;
    if (Date.now() < r.next_at) return this.#arm(name); // a long wait, taken in steps
    this.#busy.add(name);
    try {
      await this.#fire(r, r.next_at);
    } catch (err) {
      this.#o.log.warn({ err, schedule: name }, 'a schedule tick failed in the store; trying again');
      this.#arm(name, Date.now() + RETRY_MS);
    } finally {
      this.#busy.delete(name);
    }
  }

  /** Claims tick `due`; the node whose claim took it publishes and moves the schedule on. */
  async #fire(r: ScheduleRecord, due: number): Promise<void> {
    const { store, node, leaseMs, log } = this.#o;
    const now = Date.now();
    if (!(await store.call<boolean>({ call: 'claim', name: r.name, due, now, until: now + leaseMs, node }))) return this.#refresh(r.name);
    this.#o.claimed?.(r.name, due);
    // A tick late by more than a period fires once: the next is the first after now.
    const next = nextTick(r, Math.max(Date.now(), due));
    try {
      await this.#o.publish(r.source, payloadText(r), tickKey(r, due));
    } catch (err) {
      log.error({ err, schedule: r.name }, 'publishing a schedule tick failed');
    }
    await this.#o.published?.(r.name, due);
    if (!(await store.call<boolean>({ call: 'fired', name: r.name, due, next, node }))) log.warn({ schedule: r.name }, 'a fired schedule tick was not recorded (deleted, or its claim lapsed)');
    if (next === null || !this.#records.has(r.name)) return this.#forget(r.name);
    Object.assign(r, { next_at: next, last_fired_at: due, fires: r.fires + 1, claim_until: null });
    this.#arm(r.name);
  }

  /** Another node holds the tick, or moved it on: take the row as stored and look again soon while the claim is held. */
  async #refresh(name: string): Promise<void> {
    const row = await this.#o.store.call<ScheduleRecord | null>({ call: 'get', name });
    if (row === null) return this.#forget(name);
    this.#records.set(name, row);
    const held = row.next_at !== null && row.next_at <= Date.now();
    this.#arm(name, held ? Math.min(Date.now() + RECHECK_MS, (row.claim_until ?? 0) + 10) : undefined);
  }

  async #skipMissed(r: ScheduleRecord, now: number): Promise<void> {
    const next = nextTick(r, now);
    if (await this.#o.store.call<boolean>({ call: 'skip', name: r.name, due: r.next_at!, next })) {
      this.#o.log.info({ schedule: r.name, missed: new Date(r.next_at!).toISOString() }, 'schedule tick missed while stopped: skipped (catch_up "none")');
      if (next === null) this.#records.delete(r.name);
      else r.next_at = next;
    }
  }

  /** Cluster mode: schedules created, deleted or moved on by other nodes. */
  async #reload(): Promise<void> {
    const rows = await this.list();
    if (this.#stopped) return;
    const seen = new Set<string>();
    for (const row of rows) {
      seen.add(row.name);
      if (this.#busy.has(row.name)) continue;
      const mine = this.#records.get(row.name);
      if (mine !== undefined && mine.next_at === row.next_at) continue;
      this.#records.set(row.name, row);
      this.#arm(row.name);
    }
    for (const name of [...this.#records.keys()]) if (!seen.has(name) && !this.#busy.has(name)) this.#forget(name);
  }
}

/**
 * A tick's key: its fired turns are named by it, so a node that takes over a
 * tick whose first node died after publishing but before recording it replays
 * the turns already stored instead of running them twice. A short hash, so
 * every turn id stays within its 64 bytes.
 */
export function tickKey(r: Pick<ScheduleRecord, 'name' | 'created_at'>, due: number): string {
  return `tick:${createHash('sha256').update(`${r.name}\u0000${r.created_at}\u0000${due}`).digest('hex').slice(0, 24)}`;
}
