import { describe, expect, it } from 'vitest';
import { Fifo } from '../../src/shard/fifo.ts';

describe('Fifo', () => {
  it('keeps order through pushes and shifts', () => {
    const q = new Fifo<number>();
    expect(q.shift()).toBeUndefined();
    for (let i = 0; i < 5; i++) q.push(i);
    expect(q.size).toBe(5);
    expect(q.peek()).toBe(0);
    expect([q.shift(), q.shift()]).toEqual([0, 1]);
    q.push(5);
    expect([...q]).toEqual([2, 3, 4, 5]);
    expect(q.drain()).toEqual([2, 3, 4, 5]);
    expect(q.size).toBe(0);
  });

  it('stays correct across compaction of a long backlog', () => {
    const q = new Fifo<number>();
    let next = 0;
    let expected = 0;
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 300; i++) q.push(next++);
      for (let i = 0; i < 250; i++) expect(q.shift()).toBe(expected++);
    }
    expect(q.size).toBe(next - expected);
    while (q.size > 0) expect(q.shift()).toBe(expected++);
  });

  it('removeWhere removes matches and keeps the rest in order', () => {
    const q = new Fifo<number>();
    for (let i = 0; i < 10; i++) q.push(i);
    q.shift();
    expect(q.removeWhere((n) => n % 3 === 0)).toEqual([3, 6, 9]);
    expect([...q]).toEqual([1, 2, 4, 5, 7, 8]);
    expect(q.removeWhere(() => false)).toEqual([]);
    expect(q.size).toBe(6);
  });
});
