/** The client's retry rule: which errors are retried, how often, how long between tries, and bad options refused. */
import { describe, expect, it } from 'vitest';
import { AgentdError, Code, ConnectionClosedError, backoffDelay, isRetryable, withRetry, type RetryFailure } from '../../src/client/index.ts';

/** A call failing with `errors` in turn, then answering 'ok'. */
function failing(...errors: Error[]): { fn: (attempt: number) => Promise<string>; tries: number[] } {
  const tries: number[] = [];
  return {
    tries,
    fn: async (attempt) => {
      tries.push(attempt);
      const err = errors.shift();
      if (err !== undefined) throw err;
      return 'ok';
    },
  };
}

const NOW = { initialDelayMs: 0 }; // no waits: the rule is under test, not the clock

describe('withRetry', () => {
  it('retries a 503 and a lost connection, and reports each failure before the wait', async () => {
    const seen: RetryFailure[] = [];
    const call = failing(new AgentdError(Code.ShuttingDown, 'shutting down'), new ConnectionClosedError('gone'));
    await expect(withRetry(call.fn, { ...NOW, onRetry: (f) => void seen.push(f) })).resolves.toBe('ok');
    expect(call.tries).toEqual([1, 2, 3]);
    expect(seen.map((f) => [f.attempt, f.error.name, f.delayMs])).toEqual([
      [1, 'AgentdError', 0],
      [2, 'ConnectionClosedError', 0],
    ]);
  });

  it('gives up after `attempts` tries with the last error', async () => {
    const call = failing(new ConnectionClosedError('first'), new ConnectionClosedError('second'), new ConnectionClosedError('third'));
    await expect(withRetry(call.fn, { ...NOW, attempts: 2 })).rejects.toThrow('second');
    expect(call.tries).toEqual([1, 2]);
  });

  it('does not retry other errors', async () => {
    for (const err of [new AgentdError(Code.BadRequest, 'bad'), new AgentdError(Code.Internal, 'failed'), new AgentdError(Code.Cancelled, 'killed'), new TypeError('bug')]) {
      const call = failing(err);
      await expect(withRetry(call.fn, NOW)).rejects.toBe(err);
      expect(call.tries).toEqual([1]);
    }
  });

  it('gives up with the error onRetry throws', async () => {
    const call = failing(new ConnectionClosedError('gone'));
    await expect(withRetry(call.fn, { ...NOW, onRetry: () => Promise.reject(new Error('not again')) })).rejects.toThrow('not again');
    expect(call.tries).toEqual([1]);
  });

  it('refuses bad options, naming the field', async () => {
    const fn = (): Promise<string> => Promise.resolve('ok');
    await expect(withRetry(fn, { attempts: 0 })).rejects.toThrow('retry.attempts must be an integer of at least 1, got 0');
    await expect(withRetry(fn, { attempts: 1.5 })).rejects.toThrow('retry.attempts must be an integer of at least 1, got 1.5');
    await expect(withRetry(fn, { initialDelayMs: -1 })).rejects.toThrow('retry.initialDelayMs must be an integer of at least 0, got -1');
    await expect(withRetry(fn, { maxDelayMs: Number.NaN })).rejects.toThrow('retry.maxDelayMs must be an integer of at least 0, got NaN');
    await expect(withRetry(fn, { jitter: 'yes' as unknown as boolean })).rejects.toThrow('retry.jitter must be a boolean, got yes');
  });
});

describe('backoffDelay', () => {
  it('doubles from initialDelayMs up to maxDelayMs', () => {
    const opts = { initialDelayMs: 100, maxDelayMs: 500, jitter: false };
    expect([1, 2, 3, 4, 5].map((a) => backoffDelay(a, opts))).toEqual([100, 200, 400, 500, 500]);
    expect([1, 2, 3].map((a) => backoffDelay(a, { jitter: false }))).toEqual([200, 400, 800]);
  });

  it('with jitter, waits between half and all of the delay', () => {
    expect(backoffDelay(2, { initialDelayMs: 100 }, () => 0)).toBe(100);
    expect(backoffDelay(2, { initialDelayMs: 100 }, () => 0.999999)).toBe(200);
  });
});

describe('isRetryable', () => {
  it('is true for 503 and a lost connection only', () => {
    expect(isRetryable(new AgentdError(Code.ShuttingDown, 'x'))).toBe(true);
    expect(isRetryable(new ConnectionClosedError('x'))).toBe(true);
    expect(isRetryable(new AgentdError(Code.TooMany, 'x'))).toBe(false);
    expect(isRetryable(new Error('x'))).toBe(false);
    expect(isRetryable('503')).toBe(false);
  });
});
