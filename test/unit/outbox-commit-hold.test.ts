/**
 * A lone turn's frames and its `end` reach main in one batch: when a commit
 * is scheduled behind the outbox's flush in the same event-loop turn, the
 * flush waits one loop turn for the frames that commit releases. Under steady
 * commits the flush waits at most once, so frames never starve.
 */
import { describe, expect, it } from 'vitest';
import { Outbox } from '../../src/shard/outbox.ts';
import { TurnWriter } from '../../src/shard/turn-writer.ts';
import { forEachSection } from '../../src/shared/byte-layouts.ts';
import type { FrameBatch } from '../../src/shared/threads/shard-messages.ts';
import type { FrameBody } from '../../src/shared/wire/frames.ts';
import type { ConversationStorage } from '../../src/storage/contract.ts';

/** A store that commits at once, as a SQLite shard does when the write lock is free. */
const committingStore = { writeTurns: async (turns: readonly unknown[]) => turns.map(() => null) } as unknown as ConversationStorage;
const conv = { dbId: null, agent: 'a', sender: 's', title: '', stored: 0 };
const nextLoopTurn = () => new Promise((r) => setImmediate(r));

/** An outbox whose batches are kept, with the number of frame bytes each carried. */
function keptOutbox() {
  const batches: { bytes: number; done: number[] }[] = [];
  const outbox = new Outbox((batch: FrameBatch) => {
    let bytes = 0;
    if (batch.sections !== null) forEachSection(Buffer.from(batch.sections, 0, batch.sectionsBytes), (_conn, body) => (bytes += body.length));
    batches.push({ bytes, done: batch.done });
  });
  return { outbox, batches };
}

const START = { stream: { start: { agent: 'a' } } } as FrameBody;
const END = { stream: { end: { agent: 'a', error: null, model: 'echo', usage: null, stop_reason: 'end_turn' } } } as unknown as FrameBody;

/** The bytes one frame takes in a batch of its own. */
async function bytesAlone(value: FrameBody): Promise<number> {
  const { outbox, batches } = keptOutbox();
  outbox.frame(1, 7, value === END, value);
  await nextLoopTurn();
  return batches[0]!.bytes;
}

describe('the outbox and a lone turn’s commit', () => {
  it('sends the frames before the commit and the end after it in one batch', async () => {
    const { outbox, batches } = keptOutbox();
    const writer = new TurnWriter(committingStore, () => 1, () => outbox.holdForCommit());
    outbox.frame(1, 7, false, START);
    await writer.write(conv, [{ role: 'user', content: 'hi' }]).then(() => outbox.frame(1, 7, true, END));
    expect(batches).toEqual([]); // the flush waited for the commit
    await nextLoopTurn();
    expect(batches.map((b) => b.bytes)).toEqual([(await bytesAlone(START)) + (await bytesAlone(END))]);
  });

  it('waits at most one loop turn however many commits follow', async () => {
    const { outbox, batches } = keptOutbox();
    outbox.frame(1, 7, false, START);
    outbox.holdForCommit();
    await nextLoopTurn();
    outbox.holdForCommit(); // a commit in every loop turn must not hold the flush again
    await nextLoopTurn();
    expect(batches.length).toBe(1);
  });

  it('does not hold when no flush is scheduled, nor for a commit of a busy shard', async () => {
    const { outbox, batches } = keptOutbox();
    outbox.holdForCommit(); // nothing scheduled: nothing to hold
    outbox.frame(1, 7, false, START);
    await nextLoopTurn();
    expect(batches.length).toBe(1);
    let held = 0;
    const busy = new TurnWriter(committingStore, () => 5, () => held++);
    await busy.write(conv, [{ role: 'user', content: 'hi' }]);
    expect(held).toBe(0);
  });
});
