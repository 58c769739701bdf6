import { describe, expect, it } from 'vitest';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { PacedReads } from '../../src/shard/paced-reads.ts';

describe('PacedReads', () => {
  it('runs the first read at once and the rest one per event-loop turn, in order', async () => {
    const reads = new PacedReads();
    const ran: number[] = [];
    for (let i = 0; i < 3; i++) reads.add({ conn: 1, run: () => ran.push(i), drop: () => ran.push(-i) });
    expect(ran).toEqual([0]);
    await nextTurn();
    expect(ran).toEqual([0, 1]);
    await nextTurn();
    expect(ran).toEqual([0, 1, 2]);
    await nextTurn();
    reads.add({ conn: 1, run: () => ran.push(3), drop: () => {} });
    expect(ran).toEqual([0, 1, 2, 3]); // idle again: at once
  });

  it('answers a closed connection\'s waiting reads without running them; others run', async () => {
    const reads = new PacedReads();
    const ran: string[] = [];
    reads.add({ conn: 1, run: () => ran.push('a1'), drop: () => ran.push('drop a1') });
    reads.add({ conn: 1, run: () => ran.push('a2'), drop: () => ran.push('drop a2') });
    reads.add({ conn: 2, run: () => ran.push('b1'), drop: () => ran.push('drop b1') });
    reads.connClosed(1);
    await nextTurn();
    await nextTurn();
    expect(ran).toEqual(['a1', 'drop a2', 'b1']);
  });
});
