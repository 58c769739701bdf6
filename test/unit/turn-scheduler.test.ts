/**
 * Per-pair order while a conversation loads from storage: the shard's
 * requests for a pair that arrive during the load wait behind it and run in
 * arrival order, and the conversation is loaded once.
 */
import { describe, expect, it } from 'vitest';
import { TurnScheduler } from '../../src/shard/turn-scheduler.ts';
import { Models } from '../../src/models/index.ts';
import { NO_TOOLS } from '../../src/shard/tools/tools.ts';
import type { Harness } from '../../src/shard/tools/harness.ts';
import type { PairRequest } from '../../src/shared/threads/shard-messages.ts';
import { validateAgentConfig } from '../../src/shared/config-checks.ts';
import { createLogger } from '../../src/shared/log.ts';
import { turnRequest } from '../../src/main/turn-request.ts';
import { fakeOutbox, type Frame } from '../helpers/outbox.ts';
import { MemoryStorage } from '../helpers/memory-storage.ts';
import { partitionOf } from '../../src/shared/partitions.ts';

function setup(storage: MemoryStorage) {
  const out = fakeOutbox();
  const scheduler = new TurnScheduler({
    outbox: out,
    agents: { a: validateAgentConfig({}, 'test', 'a') },
    log: createLogger('silent'),
    store: storage,
    memoryConversations: 100,
    models: new Models({}),
    harness: { toolsFor: async () => NO_TOOLS } as unknown as Harness,
  });
  return { out, scheduler };
}

const turn = (req: number, content: string) => turnRequest({ conn: 1, req, mode: 'stream', agent: 'a', sender: 's', content });
const pairRequest = (type: PairRequest['type'], req: number): PairRequest => ({ type, conn: 1, req, agent: 'a', sender: 's' });

/** Resolves once every request in `reqs` has sent its last frame. */
async function answered(frames: Frame[], reqs: number[]): Promise<void> {
  while (!reqs.every((r) => frames.some((f) => f.req === r && f.last))) await new Promise((r) => setImmediate(r));
}

/** Each frame as "<req> <what>": the stream event, or the reply's key. */
const shown = (frames: Frame[]): string[] => frames.map((f) => `${f.req} ${Object.keys(f.value.stream ?? f.value)[0]}`);

async function storedEarlier(storage: MemoryStorage): Promise<void> {
  const conv = { dbId: null, agent: 'a', sender: 's', title: '', stored: 0 };
  await storage.writeTurns([{ conv, messages: [{ role: 'user', content: 'earlier' }, { role: 'assistant', content: 'earlier' }] }]);
  storage.calls.length = 0; // count only what the shard does
}

describe('TurnScheduler, a conversation loading from storage', () => {
  it('runs a turn, a history request and a second turn that arrived during the load in arrival order, loading once', async () => {
    const storage = new MemoryStorage();
    await storedEarlier(storage);
    const { out, scheduler } = setup(storage);
    storage.gateLoads();
    scheduler.handle(turn(1, 'one'));
    scheduler.handle(pairRequest('history', 2));
    scheduler.handle(turn(3, 'two'));
    await new Promise((r) => setImmediate(r));
    expect(out.frames).toEqual([]); // all three wait behind the load
    expect(storage.calls).toEqual(['load']);

    storage.releaseLoads();
    await answered(out.frames, [1, 2, 3]);
    expect(storage.calls.filter((c) => c === 'load')).toHaveLength(1);
    const order = shown(out.frames).filter((s) => !s.endsWith(' chunk'));
    // Turn 1 starts first; history answers with what was stored when it came up (turn 1 had not ended); turn 2 runs after turn 1.
    expect(order.indexOf('1 start')).toBeLessThan(order.indexOf('2 conversation_history'));
    expect(order.indexOf('1 end')).toBeLessThan(order.indexOf('3 start'));
    const history = out.frames.find((f) => f.req === 2)!.value.conversation_history;
    expect(history.messages.map((m: { content: string }) => m.content)).toEqual(['earlier', 'earlier']);
    // Turn 2 saw the loaded history and turn 1: the store holds all of it, in order.
    expect((await storage.allMessages(1)).map((m) => m.content)).toEqual(['earlier', 'earlier', 'one', 'one', 'two', 'two']);
  });

  it('a failed load answers every request that waited on it with the error, and runs none of them', async () => {
    const storage = new MemoryStorage();
    await storedEarlier(storage);
    const { out, scheduler } = setup(storage);
    storage.gateLoads();
    scheduler.handle(turn(1, 'one'));
    scheduler.handle(pairRequest('history', 2));
    scheduler.handle(pairRequest('delete', 3));
    storage.releaseLoads(new Error('the disk is gone'));
    await answered(out.frames, [1, 2, 3]);
    expect(out.frames.map((f) => [f.req, f.value.error])).toEqual([1, 2, 3].map((req) => [req, { code: 500, message: 'loading the conversation failed: the disk is gone' }]));
    expect(storage.calls).toEqual(['load']);
  });

  it('a conversation deleted while its load was under way is gone for the turn after the delete, which starts a new one', async () => {
    const storage = new MemoryStorage();
    await storedEarlier(storage);
    const { out, scheduler } = setup(storage);
    storage.gateLoads();
    scheduler.handle(pairRequest('delete', 1));
    scheduler.handle(turn(2, 'fresh'));
    scheduler.handle(pairRequest('history', 3));
    storage.releaseLoads();
    await answered(out.frames, [1, 2, 3]);
    expect(shown(out.frames).filter((s) => !s.endsWith(' chunk'))[0]).toBe('1 pong');
    expect(storage.calls.filter((c) => c === 'load')).toHaveLength(1);
    // The history request came while turn 2 ran: the new conversation had nothing stored yet.
    expect(out.frames.find((f) => f.req === 3)!.value.error).toMatchObject({ code: 404 });
    await answered(out.frames, [2]);
    expect((await storage.allMessages(2)).map((m) => m.content)).toEqual(['fresh', 'fresh']);
  });
});

describe('TurnScheduler, a cluster partition the node lost', () => {
  it('forgets the partition’s conversations once their turns ended, answering only then; other partitions stay in memory', async () => {
    const storage = new MemoryStorage();
    const { out, scheduler } = setup(storage);
    const purged: { id: number; turnEnded: boolean }[] = [];
    out.purged = (id) => purged.push({ id, turnEnded: out.frames.some((f) => f.req === 3 && f.last) });
    const partitions = 4;
    const lost = partitionOf('a', 's', partitions);
    let other = 'o0';
    for (let i = 1; partitionOf('a', other, partitions) === lost; i++) other = `o${i}`;
    const otherTurn = (req: number, content: string) => turnRequest({ conn: 1, req, mode: 'stream', agent: 'a', sender: other, content });

    scheduler.handle(turn(1, 'one'));
    scheduler.handle(otherTurn(2, 'two'));
    await answered(out.frames, [1, 2]);
    scheduler.handle(turn(3, 'three'));
    scheduler.handle({ type: 'drop_partition', id: 7, partition: lost, partitions });
    await answered(out.frames, [3]);
    while (purged.length === 0) await new Promise((r) => setImmediate(r));
    expect(purged).toEqual([{ id: 7, turnEnded: true }]);

    storage.calls.length = 0;
    scheduler.handle(pairRequest('history', 4));
    scheduler.handle({ type: 'history', conn: 1, req: 5, agent: 'a', sender: other });
    await answered(out.frames, [4, 5]);
    // Only the lost partition's conversation comes back from the store, with everything its turns stored.
    expect(storage.calls.filter((c) => c === 'load')).toHaveLength(1);
    const history = out.frames.find((f) => f.req === 4)!.value.conversation_history;
    expect(history.messages.map((m: { content: string }) => m.content)).toEqual(['one', 'one', 'three', 'three']);
  });
});
