/**
 * Retrying a call that failed for a passing reason: the daemon said 503
 * (shutting down; in a cluster, no node serves the pair right now) or the
 * connection was lost. Tries are bounded and spaced by exponential backoff.
 * Whether a retry is safe is the caller's business: `send` makes it safe by
 * naming the turn (`turn_id`), so the daemon replays a turn it already ran.
 */
import { AgentdError, Code } from '../shared/errors.ts';
import { ConnectionClosedError } from './errors.ts';

export interface RetryOptions {
  /** Tries in all, the first included; default 3. 1 means no retry. */
  attempts?: number;
  /** The wait before the second try, in milliseconds; doubled for each later one. Default 200. */
  initialDelayMs?: number;
  /** The longest wait between two tries, in milliseconds; default 5000. */
  maxDelayMs?: number;
  /** Waits a random 50-100% of each delay, so clients cut off together do not come back together; default true. */
  jitter?: boolean;
  /**
   * Called (and awaited) after a try failed with a retryable error, before the
   * wait: for logging, or to repair what failed. Throwing gives up with that error.
   */
  onRetry?: (failure: RetryFailure) => void | Promise<void>;
}

export interface RetryFailure {
  error: Error;
  /** The try that failed, from 1. */
  attempt: number;
  /** The wait before the next try. */
  delayMs: number;
}

const DEFAULTS = { attempts: 3, initialDelayMs: 200, maxDelayMs: 5000, jitter: true } as const;

/** True for the errors a retry may cure: 503 from the daemon, or a lost (or refused) connection. */
export function isRetryable(err: unknown): boolean {
  return err instanceof ConnectionClosedError || (err instanceof AgentdError && err.code === Code.ShuttingDown);
}

function checkCount(name: string, v: unknown, min: number): void {
  if (v !== undefined && (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min)) {
    throw new RangeError(`retry.${name} must be an integer of at least ${min}, got ${String(v)}`);
  }
}

/** Refuses nonsense options at once, naming the field, instead of retrying oddly. */
export function checkRetryOptions(opts: RetryOptions): void {
  checkCount('attempts', opts.attempts, 1);
  checkCount('initialDelayMs', opts.initialDelayMs, 0);
  checkCount('maxDelayMs', opts.maxDelayMs, 0);
  if (opts.jitter !== undefined && typeof opts.jitter !== 'boolean') throw new RangeError(`retry.jitter must be a boolean, got ${String(opts.jitter)}`);
  if (opts.onRetry !== undefined && typeof opts.onRetry !== 'function') throw new RangeError('retry.onRetry must be a function');
}

/** The wait after failed try `attempt` (from 1): initialDelayMs doubled per try, capped, with jitter when asked. */
export function backoffDelay(attempt: number, opts: RetryOptions = {}, random: () => number = Math.random): number {
  const initial = opts.initialDelayMs ?? DEFAULTS.initialDelayMs;
  const max = opts.maxDelayMs ?? DEFAULTS.maxDelayMs;
  const delay = Math.min(max, initial * 2 ** (attempt - 1));
  return (opts.jitter ?? DEFAULTS.jitter) ? Math.round(delay * (0.5 + random() / 2)) : delay;
}

/**
 * Runs `fn` (given the try's number, from 1) until it succeeds, fails with an
 * error `retryable` refuses, or has failed `attempts` times; then rejects with
 * the last error.
 */
export async function withRetry<T>(fn: (attempt: number) => Promise<T>, opts: RetryOptions = {}, retryable: (err: unknown) => boolean = isRetryable): Promise<T> {
  checkRetryOptions(opts);
  const attempts = opts.attempts ?? DEFAULTS.attempts;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      if (attempt >= attempts || !(err instanceof Error) || !retryable(err)) throw err;
      const delayMs = backoffDelay(attempt, opts);
      await opts.onRetry?.({ error: err, attempt, delayMs });
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}
