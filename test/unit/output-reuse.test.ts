/**
 * Sections buffers go back to their shard once main has written them
 * (OutputBuffers): the outbox packs later batches into a handed-back buffer,
 * and main hands one back only when every write holding it has completed.
 */
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { Outbox } from '../../src/shard/outbox.ts';
import { OutputReturns } from '../../src/main/hosts/output-returns.ts';
import { forEachSection, HEADER_BYTES } from '../../src/shared/byte-layouts.ts';
import { decodeBody } from '../../src/shared/codec.ts';
import { OUTPUT_REUSE_MAX_BYTES, OUTPUT_REUSE_MIN_BYTES } from '../../src/shared/threads/output-reuse.ts';
import type { FrameBatch, OutputBuffers } from '../../src/shared/threads/shard-messages.ts';

/** An outbox whose batches are kept, with their transferred buffers. */
function keptOutbox(): { outbox: Outbox; batches: FrameBatch[] } {
  const batches: FrameBatch[] = [];
  return { outbox: new Outbox((batch) => batches.push(batch)), batches };
}

/** The text deltas of a batch, by connection, read back from the bytes in use. */
function deltas(batch: FrameBatch): Map<number, string> {
  const texts = new Map<number, string>();
  forEachSection(Buffer.from(batch.sections!, 0, batch.sectionsBytes), (conn, frames) => {
    let text = '';
    for (let at = 0; at < frames.length; ) {
      const length = frames.readUInt32BE(at);
      const body = decodeBody(frames.subarray(at + HEADER_BYTES, at + HEADER_BYTES + length)) as { stream: { chunk: { content: string } } };
      text += body.stream.chunk.content;
      at += HEADER_BYTES + length;
    }
    texts.set(conn, text);
  });
  return texts;
}

const text = (bytes: number, letter: string): string => letter.repeat(bytes);

describe('the outbox with handed-back buffers', () => {
  it('packs a batch into a handed-back buffer that fits, and says how many of its bytes are used', () => {
    const { outbox, batches } = keptOutbox();
    outbox.textDelta(1, 7, 'chunk', text(40_000, 'a'), 1);
    outbox.flush();
    const first = batches[0]!;
    // Rounded up to a power of two, so that later batches of about the same size fit it.
    expect(first.sections!.byteLength).toBe(65_536);
    expect(first.sectionsReturn).toBe(true);
    expect(deltas(first).get(1)).toBe(text(40_000, 'a'));

    outbox.reuse([first.sections!]);
    outbox.textDelta(2, 8, 'chunk', text(50_000, 'b'), 1);
    outbox.flush();
    const second = batches[1]!;
    expect(second.sections).toBe(first.sections);
    expect(second.sectionsReturn).toBe(true);
    expect(second.sectionsBytes).toBeLessThan(second.sections!.byteLength);
    expect(deltas(second)).toEqual(new Map([[2, text(50_000, 'b')]]));
  });

  it('allocates when no handed-back buffer is big enough, and small or huge batches get a buffer of their exact size, which main keeps', () => {
    const { outbox, batches } = keptOutbox();
    outbox.reuse([new ArrayBuffer(OUTPUT_REUSE_MIN_BYTES)]);
    outbox.textDelta(1, 1, 'chunk', text(100_000, 'c'), 1);
    outbox.flush();
    expect(batches[0]!.sections!.byteLength).toBe(131_072);
    outbox.textDelta(1, 2, 'chunk', 'small', 1);
    outbox.flush();
    expect(batches[1]!.sections!.byteLength).toBe(batches[1]!.sectionsBytes);
    outbox.textDelta(1, 3, 'chunk', text(OUTPUT_REUSE_MAX_BYTES + 1, 'd'), 1);
    outbox.flush();
    expect(batches[2]!.sections!.byteLength).toBe(batches[2]!.sectionsBytes);
    expect(batches.map((b) => b.sectionsReturn)).toEqual([true, false, false]);
  });

  it('packs a batch of many small sections (a broadcast), which main keeps, into a new buffer of its size, never a handed-back one', () => {
    const { outbox, batches } = keptOutbox();
    const handedBack = new ArrayBuffer(OUTPUT_REUSE_MAX_BYTES);
    outbox.reuse([handedBack]);
    for (let conn = 1; conn <= 100; conn++) outbox.textDelta(conn, 1, 'chunk', text(400, 'f'), 1);
    outbox.flush();
    const batch = batches[0]!;
    expect(batch.sectionsBytes).toBeGreaterThanOrEqual(OUTPUT_REUSE_MIN_BYTES);
    expect(batch.sections).not.toBe(handedBack);
    expect(batch.sections!.byteLength).toBe(batch.sectionsBytes);
    expect(batch.sectionsReturn).toBe(false);
  });

  it('keeps at most 4 MiB of handed-back buffers: an idle shard holds no more', () => {
    const { outbox, batches } = keptOutbox();
    const handedBack = Array.from({ length: 5 }, () => new ArrayBuffer(OUTPUT_REUSE_MAX_BYTES));
    outbox.reuse(handedBack);
    for (let i = 0; i < 5; i++) {
      outbox.textDelta(1, i, 'chunk', text(600_000, 'e'), 1);
      outbox.flush();
    }
    const reused = batches.map((b) => handedBack.indexOf(b.sections!));
    expect(reused.slice(0, 4).sort()).toEqual([0, 1, 2, 3]);
    expect(reused[4]).toBe(-1);
  });
});

/**
 * A shard's end of a real MessageChannel, so transfers detach as they would
 * to a Worker; `posts` records what arrives, and `marked` resolves when a
 * post of no buffers (the test's marker) arrives.
 */
function fakeWorker(): { worker: MessagePort; posts: OutputBuffers[]; marked: () => Promise<void> } {
  const { port1, port2 } = new MessageChannel();
  const posts: OutputBuffers[] = [];
  let wake: () => void = () => undefined;
  port2.on('message', (msg: OutputBuffers) => {
    if (msg.buffers.length === 0) wake();
    else posts.push(msg);
  });
  port2.unref();
  const marked = () => new Promise<void>((resolve) => (wake = resolve));
  return { worker: port1, posts, marked };
}

const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

/** What arrived at the shard's end once main's flush has run: a marker posted after it arrives after anything main posted. */
async function received(channel: ReturnType<typeof fakeWorker>): Promise<OutputBuffers[]> {
  await nextTurn();
  const marker = channel.marked();
  channel.worker.postMessage({ type: 'output_buffers', buffers: [] } satisfies OutputBuffers);
  await marker;
  return channel.posts.splice(0);
}

describe('main handing buffers back', () => {
  it('hands a buffer back only once every write of it has completed, transferred (detached in main)', async () => {
    const returns = new OutputReturns();
    const channel = fakeWorker();
    const buffer = new ArrayBuffer(65_536);
    new Uint8Array(buffer)[100] = 42;
    const lease = returns.lease(channel.worker, buffer, () => true);
    const first = lease.hold();
    const second = lease.hold();
    lease.done();
    lease.done(); // a second done changes nothing
    first();
    first(); // nor a second call of one hold
    expect(await received(channel)).toEqual([]);
    second();
    const [back] = await received(channel);
    expect(buffer.byteLength).toBe(0);
    expect(back!.buffers).toHaveLength(1);
    expect(back!.buffers[0]!.byteLength).toBe(65_536);
    expect(new Uint8Array(back!.buffers[0]!)[100]).toBe(42);
  });

  it('keeps what a write never reports and what a replaced shard made', async () => {
    const returns = new OutputReturns();
    const channel = fakeWorker();
    const unreported = returns.lease(channel.worker, new ArrayBuffer(65_536), () => true);
    unreported.hold(); // a forwarded call: never released
    unreported.done();
    const replaced = returns.lease(channel.worker, new ArrayBuffer(65_536), () => false);
    replaced.done();
    expect(await received(channel)).toEqual([]);
  });

  it('sends the buffers written in one event-loop turn together', async () => {
    const returns = new OutputReturns();
    const channel = fakeWorker();
    const sizes = [65_536, 131_072];
    for (const size of sizes) returns.lease(channel.worker, new ArrayBuffer(size), () => true).done();
    const back = await received(channel);
    expect(back).toHaveLength(1);
    expect(back[0]!.buffers.map((b) => b.byteLength)).toEqual(sizes);
    expect(returns.returned).toBe(2);
  });

  it('does not throw when a post cannot be made, and still sends the other shards theirs', async () => {
    const returns = new OutputReturns();
    const [broken, healthy] = [fakeWorker(), fakeWorker()];
    // One buffer leased twice would be listed twice, and a transfer list with a duplicate throws DataCloneError.
    const twice = new ArrayBuffer(65_536);
    returns.lease(broken.worker, twice, () => true).done();
    returns.lease(broken.worker, twice, () => true).done();
    returns.lease(healthy.worker, new ArrayBuffer(65_536), () => true).done();
    expect(await received(broken)).toEqual([]);
    expect((await received(healthy)).map((m) => m.buffers.length)).toEqual([1]);
    expect(returns.returned).toBe(1); // only what was posted counts
  });
});
