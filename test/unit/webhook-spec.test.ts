/** Webhook pieces with no daemon: the retry backoff, the host rule, the signature. */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { backoff } from '../../src/main/webhooks/delivery-loop.ts';
import { hostAllowed, signature } from '../../src/main/webhooks/webhook-spec.ts';

describe('webhook delivery', () => {
  it('backs off exponentially with jitter between half and all of the delay, capped at an hour', () => {
    expect([1, 2, 3, 4].map((n) => backoff(1000, n, () => 0))).toEqual([500, 1000, 2000, 4000]);
    expect([1, 2, 3, 4].map((n) => backoff(1000, n, () => 1))).toEqual([1000, 2000, 4000, 8000]);
    expect(backoff(1000, 60, () => 1)).toBe(3_600_000);
  });

  it('allows a host by exact name or under a *.domain rule; an empty list allows any', () => {
    expect(hostAllowed('evil.test', [])).toBe(true);
    expect(hostAllowed('hooks.example.com', ['*.example.com'])).toBe(true);
    expect(hostAllowed('example.com.evil.test', ['*.example.com'])).toBe(false);
    expect(hostAllowed('notexample.com', ['*.example.com'])).toBe(false);
    expect(hostAllowed('127.0.0.1', ['127.0.0.1'])).toBe(true);
    expect(hostAllowed('[::1]', ['::1'])).toBe(true);
  });

  it('signs "<t>.<body>" with HMAC-SHA256 under the secret', () => {
    const body = '{"kind":"turn_end"}';
    const mac = createHmac('sha256', 'whsec-0123456789abcdef').update(`1700000000.${body}`).digest('hex');
    expect(signature('whsec-0123456789abcdef', body, 1_700_000_000)).toBe(`t=1700000000,v1=${mac}`);
  });
});
