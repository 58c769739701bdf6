/**
 * TurnWriter's batching against a store that bounds its commits in flight
 * (PostgreSQL: one): turns finishing during a commit wait, and go together in
 * the next; a failed commit fails only its own batch; a batch is `alone`
 * (a SQLite shard may commit it itself) only when nothing else is under way.
 */
import { describe, expect, it } from 'vitest';
import { TurnWriter } from '../../src/shard/turn-writer.ts';
import type { ConversationStorage, TurnRecord } from '../../src/storage/contract.ts';

/** Just the group-commit part of a store: each call's batch is recorded and settled by the test. */
function recordingStore(commitsInFlight?: number) {
  const calls: { senders: string[]; alone: boolean | undefined; settle: (err?: Error) => void }[] = [];
  const store = {
    commitsInFlight,
    writeTurns(turns: readonly TurnRecord[], alone?: boolean): Promise<(Error | null)[]> {
      return new Promise((resolve, reject) => {
        calls.push({ senders: turns.map((t) => t.conv.sender), alone, settle: (err) => (err ? reject(err) : resolve(turns.map(() => null))) });
      });
    },
  };
  return { store: store as unknown as ConversationStorage, calls };
}

const conv = (sender: string) => ({ dbId: null, agent: 'a', sender, title: '', stored: 0 });
const turnOf = (w: TurnWriter, sender: string) => w.write(conv(sender), [{ role: 'user', content: sender }]);
const nextLoopTurn = () => new Promise((r) => setImmediate(r));

describe('TurnWriter', () => {
  it('with one commit in flight, turns finishing meanwhile go together in the next commit', async () => {
    const { store, calls } = recordingStore(1);
    const w = new TurnWriter(store, () => 1);
    const first = turnOf(w, 's1');
    await nextLoopTurn();
    expect(calls.map((c) => c.senders)).toEqual([['s1']]);
    const later = [turnOf(w, 's2'), turnOf(w, 's3')];
    await nextLoopTurn();
    const more = turnOf(w, 's4');
    await nextLoopTurn();
    expect(calls.length).toBe(1); // still waiting for the first commit
    calls[0]!.settle();
    await first;
    await nextLoopTurn();
    expect(calls.map((c) => c.senders)).toEqual([['s1'], ['s2', 's3', 's4']]);
    calls[1]!.settle(new Error('the server went away'));
    await expect(Promise.all(later)).rejects.toThrow('the server went away');
    await expect(more).rejects.toThrow('the server went away');
    // After a failed commit the writer goes on.
    const after = turnOf(w, 's5');
    await nextLoopTurn();
    calls[2]!.settle();
    await after;
    expect(calls[2]!.senders).toEqual(['s5']);
  });

  it('without a bound, each loop turn’s turns commit at once', async () => {
    const { store, calls } = recordingStore();
    const w = new TurnWriter(store, () => 1);
    void turnOf(w, 's1');
    await nextLoopTurn();
    void turnOf(w, 's2');
    await nextLoopTurn();
    expect(calls.map((c) => c.senders)).toEqual([['s1'], ['s2']]);
  });

  it('a batch is alone only when it holds every job the shard has under way', async () => {
    const { store, calls } = recordingStore();
    let open = 3;
    const w = new TurnWriter(store, () => open);
    void turnOf(w, 's1');
    void turnOf(w, 's2');
    await nextLoopTurn();
    void turnOf(w, 's3');
    open = 1;
    await nextLoopTurn();
    expect(calls.map((c) => [c.senders, c.alone])).toEqual([[['s1', 's2'], false], [['s3'], true]]);
  });
});
