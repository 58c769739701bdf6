/**
 * The one delivery loop of a node: it claims due deliveries from the outbox
 * (the store), posts each, signed, and records what came of it. A 2xx
 * delivers; a 5xx, 408, 429, a timeout or a connection error is tried again
 * after an exponential backoff with jitter, until the webhook's
 * max_attempts; any other status fails it at once. It reads only the
 * table, so what a restart or a dead node left pending goes out the same
 * way.
 */
import type { Logger } from '../../shared/log.ts';
import type { AttemptResult, DeliveryRecord } from '../../storage/webhook-calls.ts';
import type { WebhookRecord } from '../../storage/webhook-calls.ts';
import { signature } from './webhook-spec.ts';
import type { WebhookStore } from './webhook-store.ts';

export interface DeliveryLoopOptions {
  store: WebhookStore;
  node: string;
  log: Logger;
  /** The webhook a delivery belongs to, as this node knows it (undefined: deleted). */
  webhook(name: string): WebhookRecord | undefined;
  /** The first retry's delay; each next one doubles (with jitter), up to an hour. */
  backoffMs: number;
  /** Most time one attempt may take. */
  timeoutMs: number;
}

const BATCH = 32;
const MAX_BACKOFF_MS = 3_600_000;
/** A claim outlives its attempt by this much: a node that died mid-attempt leaves it to others after. */
const CLAIM_SLACK_MS = 5_000;
/** Finished deliveries kept per webhook, for `webhook_deliveries`; older ones are pruned. */
export const KEEP_FINISHED = 1_000;
const PRUNE_EVERY_MS = 60_000;

/** The delay before attempt `attempts + 1`: base × 2^(attempts-1), capped, then between half and all of it. */
export function backoff(baseMs: number, attempts: number, random = Math.random): number {
  const full = Math.min(MAX_BACKOFF_MS, baseMs * 2 ** Math.min(attempts - 1, 40));
  return Math.round(full / 2 + (random() * full) / 2);
}

type Outcome = { kind: 'delivered' } | { kind: 'retry' | 'failed'; error: string };

function outcomeOf(status: number, statusText: string): Outcome {
  if (status >= 200 && status < 300) return { kind: 'delivered' };
  const error = `HTTP ${status}${statusText === '' ? '' : ` ${statusText}`}`;
  return status >= 500 || status === 408 || status === 429 ? { kind: 'retry', error } : { kind: 'failed', error };
}

function errorText(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; cause?: { code?: string; message?: string }; message?: string };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `timed out after ${timeoutMs} ms`;
  return `connection error: ${e.cause?.code ?? e.cause?.message ?? e.message ?? String(err)}`;
}

export class DeliveryLoop {
  readonly #o: DeliveryLoopOptions;
  #timer: NodeJS.Timeout | null = null;
  #running = false;
  #again = false;
  #stopped = false;
  #lastPrune = 0;

  constructor(opts: DeliveryLoopOptions) {
    this.#o = opts;
  }

  /** Looks for due deliveries now and then every `pollMs` (retries come due by time alone). */
  start(pollMs: number): void {
    this.#timer = setInterval(() => this.kick(), pollMs);
    this.#timer.unref();
    this.kick();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== null) clearInterval(this.#timer);
  }

  /** New deliveries were stored (or the clock moved): a pass runs now, or again after the one running. */
  kick(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = true;
    void this.#passes().finally(() => (this.#running = false));
  }

  async #passes(): Promise<void> {
    try {
      do {
        this.#again = false;
        const now = Date.now();
        const due = await this.#o.store.call<DeliveryRecord[]>({ call: 'claim_due', now, until: now + this.#o.timeoutMs + CLAIM_SLACK_MS, node: this.#o.node, limit: BATCH });
        await Promise.all(due.map((d) => this.#attempt(d)));
        // A delivered one may have made the next of its conversation due.
        if (due.length > 0) this.#again = true;
      } while (this.#again && !this.#stopped);
      await this.#prune();
    } catch (err) {
      if (!this.#stopped) this.#o.log.warn({ err }, 'webhook delivery pass failed');
    }
  }

  async #prune(): Promise<void> {
    if (Date.now() - this.#lastPrune < PRUNE_EVERY_MS) return;
    this.#lastPrune = Date.now();
    await this.#o.store.call({ call: 'prune', keep: KEEP_FINISHED });
  }

  async #attempt(d: DeliveryRecord): Promise<void> {
    const hook = this.#o.webhook(d.webhook);
    if (hook === undefined) return; // deleted: its deliveries went with it
    const outcome = await this.#post(hook, d);
    const attempts = d.attempts + 1;
    const now = Date.now();
    let result: AttemptResult;
    if (outcome.kind === 'delivered') result = { status: 'delivered', attempts, last_error: d.last_error, next_attempt_at: null, finished_at: now };
    else if (outcome.kind === 'failed' || attempts >= hook.max_attempts) {
      const error = outcome.kind === 'failed' ? outcome.error : `${outcome.error} (gave up after ${attempts} attempts)`;
      result = { status: 'failed', attempts, last_error: error, next_attempt_at: null, finished_at: now };
      this.#o.log.warn({ webhook: d.webhook, delivery: d.id, error }, 'webhook delivery failed');
    } else result = { status: 'pending', attempts, last_error: outcome.error, next_attempt_at: now + backoff(this.#o.backoffMs, attempts), finished_at: null };
    await this.#o.store.call({ call: 'attempted', id: d.id, node: this.#o.node, result });
  }

  async #post(hook: WebhookRecord, d: DeliveryRecord): Promise<Outcome> {
    const t = Math.floor(Date.now() / 1000);
    try {
      const res = await fetch(hook.url, {
        method: 'POST',
        redirect: 'manual', // a redirect could lead past webhook_hosts: it counts as a refusal
        signal: AbortSignal.timeout(this.#o.timeoutMs),
        headers: { 'content-type': 'application/json', 'user-agent': 'agentd-webhooks', 'x-agentd-delivery': d.id, 'x-agentd-signature': signature(hook.secret, d.body, t) },
        body: d.body,
      });
      await res.body?.cancel().catch(() => undefined);
      return outcomeOf(res.status, res.statusText);
    } catch (err) {
      return { kind: 'retry', error: errorText(err, this.#o.timeoutMs) };
    }
  }
}
