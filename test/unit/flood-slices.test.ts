/**
 * Floods are taken a slice per event-loop turn: main's fire queue (fired
 * turns of pipelined publishes) and a shard's inbox (main's batches). Order
 * is kept, a lone small batch is handled at once, and what arrives between
 * slices is seen before the rest of the flood.
 */
import { describe, expect, it } from 'vitest';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { FireQueue } from '../../src/main/bus/fire-queue.ts';
import { Inbox } from '../../src/shard/inbox.ts';

/** Spins for `ms` of CPU: a slice is measured in time. */
function burn(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('FireQueue', () => {
  it('fires a lone publish before it yields, and reports how many started', () => {
    const q = new FireQueue();
    const fired: number[] = [];
    let started = -1;
    q.add({ fires: [1, 2, 3], fire: (n) => (fired.push(n), n !== 2), done: (s) => (started = s) });
    expect(fired).toEqual([1, 2, 3]);
    expect(started).toBe(2);
  });

  it('spreads a flood over event-loop turns in order, so other work runs between slices', async () => {
    const q = new FireQueue();
    const fired: number[] = [];
    const fires = Array.from({ length: 50 }, (_, i) => i);
    let doneAt = -1;
    const between: number[] = [];
    q.add({ fires, fire: (n) => (burn(1), fired.push(n), true), done: (s) => (doneAt = s) });
    q.add({ fires: [100, 101], fire: (n) => (fired.push(n), true), done: () => {} });
    expect(fired.length).toBeLessThan(50); // the first slice only
    while (doneAt < 0) {
      between.push(fired.length);
      await nextTurn();
    }
    await nextTurn();
    expect(doneAt).toBe(50);
    expect(fired).toEqual([...fires, 100, 101]);
    expect(between.length).toBeGreaterThan(1); // something else ran while the flood went on
  });
});

describe('Inbox', () => {
  it('handles a small batch at once, in order', () => {
    const seen: string[] = [];
    const inbox = new Inbox<string>((m) => seen.push(m), (m) => m === 'query');
    inbox.take(['a', 'b', 'c']);
    expect(seen).toEqual(['a', 'b', 'c']);
    expect(inbox.waiting).toBe(0);
  });

  it('takes a flood in slices, keeps its order, and answers a query that arrives meanwhile before the rest', async () => {
    const seen: string[] = [];
    const inbox = new Inbox<string>((m) => (m !== 'query' && burn(1), seen.push(m)), (m) => m === 'query');
    const flood = Array.from({ length: 60 }, (_, i) => `t${i}`);
    inbox.take(flood);
    expect(inbox.waiting).toBeGreaterThan(0);
    inbox.take(['query', 'after']);
    expect(seen.at(-1)).toBe('query'); // answered on arrival
    while (inbox.waiting > 0) await nextTurn();
    expect(seen.filter((m) => m !== 'query')).toEqual([...flood, 'after']);
  });
});
