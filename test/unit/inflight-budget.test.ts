import { describe, expect, it } from 'vitest';
import { InflightBudget } from '../../src/main/hosts/inflight-budget.ts';

describe('InflightBudget', () => {
  it('counts per connection and refuses past the limit with 429 naming the setting', () => {
    const budget = new InflightBudget(2);
    budget.take(1);
    budget.take(1);
    expect(() => budget.take(1)).toThrow(expect.objectContaining({ code: 429, message: 'too many requests in flight on this connection: the limit is 2 (config key max_inflight_per_connection)' }));
    budget.take(2); // another connection is unaffected
    budget.release(1);
    budget.take(1);
    expect(budget.refused).toBe(1);
  });

  it('ignores a release it holds nothing for', () => {
    const budget = new InflightBudget(1);
    budget.release(7);
    budget.take(7);
    expect(() => budget.take(7)).toThrow();
  });
});
