import { describe, expect, it } from 'vitest';
import { InflightBudget } from '../../src/main/hosts/inflight-budget.ts';
import { ObserverHub } from '../../src/main/bus/observers.ts';
import { McpEventStreams } from '../../src/main/hosts/mcp-events.ts';

describe('InflightBudget', () => {
  it('counts per connection and refuses past the limit with 429 naming the setting', () => {
    const budget = new InflightBudget(2);
    budget.take(1);
    budget.take(1);
    expect(() => budget.take(1)).toThrow(expect.objectContaining({ code: 429, message: 'too many requests in flight on this connection: the limit is 2 (config key max_inflight_per_connection)' }));
    budget.take(2); // another connection is unaffected
    budget.release(1);
    budget.take(1);
    expect(() => budget.take(1)).toThrow();
  });

  it('ignores a release it holds nothing for', () => {
    const budget = new InflightBudget(1);
    budget.release(7);
    budget.take(7);
    expect(() => budget.take(7)).toThrow();
  });
});

describe('streams hold the budget while open', () => {
  it('an observer and an MCP event subscription each count as one request until closed or their connection goes', () => {
    const budget = new InflightBudget(2);
    const observers = new ObserverHub(() => {}, 64, budget);
    const mcp = new McpEventStreams();
    mcp.limitWith(budget);
    const sink = { id: 1, write: () => {}, backlog: () => 0 };
    observers.add(sink, 1, null);
    mcp.add(sink, 2, null);
    expect(() => observers.add(sink, 3, null)).toThrow(expect.objectContaining({ code: 429, message: expect.stringMatching(/max_inflight_per_connection/) }));
    expect(observers.count).toBe(1); // the refused stream was not opened
    observers.close(sink, 1);
    observers.add(sink, 3, null);
    observers.connClosed(1);
    mcp.connClosed(1);
    budget.take(1);
    budget.take(1);
  });
});
