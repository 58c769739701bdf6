import { describe, expect, it } from 'vitest';
import { ChainBudget } from '../../src/main/bus/chain-budget.ts';
import { lostVerdict, TurnLedger } from '../../src/main/turn-ledger.ts';
import { turnRequest } from '../../src/main/turn-request.ts';

describe('ChainBudget', () => {
  it('admits max fires per chain, cuts once, and forgets a chain with its last turn', () => {
    const b = new ChainBudget(2);
    const chain = b.begin(0);
    expect([b.admit(chain), b.admit(chain), b.admit(chain), b.admit(chain)]).toEqual(['ok', 'ok', 'first_cut', 'cut']);
    expect(b.dropped).toBe(2);
    b.settle(chain);
    expect(b.live).toBe(1); // two turns still open
    b.turnEnded(chain);
    b.turnEnded(chain);
    expect(b.live).toBe(0);
    // A `done` published after its chain was forgotten starts a fresh chain.
    expect(b.begin(chain)).not.toBe(chain);
  });

  it('gives back a fire that started no turn, and forgets a chain that fired nothing', () => {
    const b = new ChainBudget(1);
    const chain = b.begin(0);
    expect(b.admit(chain)).toBe('ok');
    b.unadmit(chain);
    b.settle(chain);
    expect(b.live).toBe(0);
  });

  it('cluster mode: a fire sent to another node carries half of what is left, and the two sides together stay within max', () => {
    const here = new ChainBudget(10);
    const there = new ChainBudget(10);
    const chain = here.begin(0);
    expect(here.admit(chain)).toBe('ok'); // the fire sent away: 9 left
    const share = here.carve(chain);
    expect(share).toBe(4);
    // Here: 10 - 1 - 4 = 5 more fires.
    expect(Array.from({ length: 6 }, () => here.admit(chain))).toEqual(['ok', 'ok', 'ok', 'ok', 'ok', 'first_cut']);
    // There: the carried chain has its one open turn (the fired one) and fires up to its share.
    const carried = there.carried(share);
    expect(Array.from({ length: 5 }, () => there.admit(carried))).toEqual(['ok', 'ok', 'ok', 'ok', 'first_cut']);
    expect(there.live).toBe(1);
    for (let i = 0; i < 5; i++) there.turnEnded(carried);
    expect(there.live).toBe(0);
    // Nothing left: the share is 0, and a chain carrying 0 fires nothing.
    expect(here.carve(chain)).toBe(0);
    const empty = there.carried(0);
    expect(there.admit(empty)).toBe('first_cut');
  });
});

describe('TurnLedger', () => {
  const turn = (sender: string, ephemeral = false) => turnRequest({ conn: 1, req: 1, mode: 'stream', agent: 'a', sender, content: 'x', ephemeral });

  it('counts what a pair holds, without ephemeral turns, and gives back a lost shard’s turns', () => {
    const l = new TurnLedger();
    const [t1, t2, t3] = [turn('s'), turn('s'), turn('s', true)];
    l.open(0, t1);
    l.open(0, t2);
    l.open(1, t3);
    expect(new Set([t1.seq, t2.seq, t3.seq]).size).toBe(3);
    expect(l.held('a', 's')).toBe(2);
    l.started(t1.seq);
    expect(l.ended(t2.seq, 0)?.req).toBe(t2);
    expect(l.held('a', 's')).toBe(1);
    const lost = l.takeShard(0);
    expect(lost.map((t) => t.req)).toEqual([t1]);
    expect(l.held('a', 's')).toBe(0);
    expect(l.size).toBe(1);
  });

  it('judges a lost turn by whether it was running and why its shard went', () => {
    const l = new TurnLedger();
    const running = turn('s');
    const queued = turn('s');
    l.open(0, running);
    l.open(0, queued);
    const [r, q] = l.takeShard(0);
    // Running known only from the shard's RUNNING cell (its batch never came).
    expect(lostVerdict(r, running.seq, 'stall')).toEqual({ stopReason: 'stalled', stored: true, recordStalled: true });
    expect(lostVerdict(r, running.seq, 'crash')).toEqual({ stopReason: 'error', stored: 'unknown', recordStalled: false });
    expect(lostVerdict(q, running.seq, 'stall')).toEqual({ stopReason: 'error', stored: false, recordStalled: false });
  });
});
