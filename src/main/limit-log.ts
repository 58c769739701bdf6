/**
 * Logs limit hits (429s) for operators: one line at info per limit, then at
 * most one per interval with how many more hits it left out, so a client
 * hammering a limit cannot flood the log.
 */
import type { Logger } from '../shared/log.ts';

const INTERVAL_MS = 10_000;

export class LimitLog {
  readonly #last = new Map<string, { at: number; skipped: number }>();

  constructor(
    readonly log: Logger,
    readonly intervalMs = INTERVAL_MS,
    readonly now: () => number = Date.now,
  ) {}

  /** A refusal with 429; `limit` groups hits of one limit, `fields` describe this one. */
  hit(limit: string, message: string, fields: Record<string, unknown> = {}): void {
    const seen = this.#last.get(limit);
    const t = this.now();
    if (seen !== undefined && t - seen.at < this.intervalMs) {
      seen.skipped++;
      return;
    }
    this.log.info({ limit, ...fields, ...(seen !== undefined && seen.skipped > 0 ? { more_hits_not_logged: seen.skipped } : {}) }, `limit reached (429): ${message}`);
    this.#last.set(limit, { at: t, skipped: 0 });
  }
}
