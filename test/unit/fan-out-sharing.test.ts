/**
 * Fan-out that shares bytes: a published payload crosses to a shard once
 * whatever the number of subscriptions it fires, and a big agent event's body
 * is one buffer every observer's socket shares.
 */
import { describe, expect, it } from 'vitest';
import { MessageChannel } from 'node:worker_threads';
import { busTurn } from '../../src/main/turn-request.ts';
import { decodeBody, decodeTurnContent, encodeBody, FrameDecoder } from '../../src/shared/codec.ts';
import { LAZY_BODY_BYTES } from '../../src/main/net/request-body.ts';
import { ObserverHub, type ObserverSink } from '../../src/main/bus/observers.ts';
import { SHARED_BODY_BYTES } from '../../src/main/bus/observer-frames.ts';
import type { TurnRequest } from '../../src/shared/threads/shard-messages.ts';

/** Posts `batch` through a real MessagePort (a structured clone, as to a shard) and returns what arrives. */
function across<T>(batch: T): Promise<T> {
  const { port1, port2 } = new MessageChannel();
  return new Promise((resolve) => {
    port2.once('message', (m: T) => {
      port1.close();
      resolve(m);
    });
    port1.postMessage(batch);
  });
}

describe('a published payload', () => {
  it('travels as one set of shared bytes for every fire of one publish, and decodes to one text on the shard', async () => {
    const payload = 'ünïcode words '.repeat(LAZY_BODY_BYTES / 8);
    const turns = Array.from({ length: 40 }, (_, i) => busTurn(`a${i}`, 'big', payload, 1, 0));
    const bytes = turns[0]!.contentBytes!;
    expect(bytes.buffer).toBeInstanceOf(SharedArrayBuffer);
    for (const t of turns) expect(t.contentBytes).toBe(bytes);
    const arrived = await across(turns);
    const first = arrived[0]!.contentBytes!;
    for (const t of arrived) expect(t.contentBytes).toBe(first); // one object after the clone: the memory is not copied per turn
    for (const t of arrived) decodeTurnContent(t);
    expect(arrived[0]!.content).toBe(payload);
    expect(arrived.every((t: TurnRequest) => t.content === arrived[0]!.content && t.contentBytes === null)).toBe(true);
  });

  it('stays a plain string when small, and the next publish makes bytes of its own', async () => {
    expect(busTurn('a', 's', 'small', 1, 0).content).toBe('small');
    const one = busTurn('a', 's', 'x'.repeat(LAZY_BODY_BYTES), 1, 0).contentBytes;
    await Promise.resolve(); // the publish's synchronous run is over
    const two = busTurn('a', 's', 'y'.repeat(LAZY_BODY_BYTES), 1, 0).contentBytes;
    expect(two).not.toBe(one);
    expect(Buffer.from(two!).toString()).toBe('y'.repeat(LAZY_BODY_BYTES));
  });
});

/** A fake connection that keeps every piece written, and decodes them. */
function sink(id: number): ObserverSink & { pieces: Uint8Array[]; frames: { id: number; body: any }[]; backlogBytes: number; cutAt: number | null } {
  const frames: { id: number; body: any }[] = [];
  const decoder = new FrameDecoder({ onFrame: (fid, _flags, body) => frames.push({ id: fid, body: decodeBody(body) }), onOversize: () => {} }, 64 * 1024 * 1024);
  const s = {
    id,
    frames,
    pieces: [] as Uint8Array[],
    backlogBytes: 0,
    cutAt: null as number | null,
    backlog: () => s.backlogBytes,
    write: (piece: Uint8Array) => {
      s.pieces.push(piece);
      decoder.push(Buffer.from(piece));
    },
    writeChunks: (chunks: readonly Uint8Array[]) => chunks.forEach((c) => s.write(c)),
    slowConsumer: (bound: number, ms: number) => void (s.cutAt = bound + ms),
  };
  return s;
}

describe('a big agent event', () => {
  it('is written to every observer as the same body bytes, each behind its own header', () => {
    const hub = new ObserverHub(() => {});
    const sinks = Array.from({ length: 8 }, (_, i) => sink(i + 1));
    sinks.forEach((s, i) => hub.add(s, 100 + i, null));
    const big = encodeBody({ agent_event: { agent: 'a', content: 'z'.repeat(4 * SHARED_BODY_BYTES) } });
    const small = encodeBody({ agent_event: { agent: 'a', content: 'tiny' } });
    hub.broadcast(['a', 'a', 'a'], [small, big, small]);
    for (const [i, s] of sinks.entries()) {
      expect(s.frames.map((f) => [f.id, f.body.agent_event.content.length])).toEqual([[100 + i, 4], [100 + i, 4 * SHARED_BODY_BYTES], [100 + i, 4]]);
      expect(s.pieces.filter((p) => p === big)).toHaveLength(1); // the shard's bytes themselves, not a copy
    }
  });

  it('writes observers of the same request id the same frame buffers, and others their own id', () => {
    const hub = new ObserverHub(() => {});
    const sameId = [sink(1), sink(2), sink(3)];
    const otherId = sink(4);
    for (const s of sameId) hub.add(s, 1, null);
    hub.add(otherId, 2, null);
    hub.broadcast(['a', 'a'], [encodeBody({ agent_event: { agent: 'a', content: 'x' } }), encodeBody({ agent_event: { agent: 'a', content: 'y' } })]);
    for (const s of sameId) {
      expect(s.frames.map((f) => [f.id, f.body.agent_event.content])).toEqual([[1, 'x'], [1, 'y']]);
      expect(s.pieces).toHaveLength(1);
      expect(s.pieces[0]).toBe(sameId[0]!.pieces[0]); // one buffer, every socket of id 1 shares it
    }
    expect(otherId.frames.map((f) => [f.id, f.body.agent_event.content])).toEqual([[2, 'x'], [2, 'y']]);
    expect(otherId.pieces[0]).not.toBe(sameId[0]!.pieces[0]);
  });

  it('keeps every connection\'s ids apart as ids interleave and observers come and go on one connection', () => {
    const hub = new ObserverHub(() => {});
    const a = sink(1);
    const b = sink(2);
    const c = sink(3);
    hub.add(a, 7, null);
    hub.add(b, 9, 'other');
    hub.add(b, 8, null); // b now has two observers: the connection is written through the map
    hub.add(c, 7, null);
    const event = (agent: string, content: string): Uint8Array => encodeBody({ agent_event: { agent, content } });
    const seen = (s: ReturnType<typeof sink>): unknown[] => s.frames.splice(0).map((f) => [f.id, f.body.agent_event?.content ?? Object.keys(f.body)[0]]);
    hub.broadcast(['x', 'other'], [event('x', '1'), event('other', '2')]);
    expect([seen(a), seen(b), seen(c)]).toEqual([[[7, '1'], [7, '2']], [[9, '2'], [8, '1'], [8, '2']], [[7, '1'], [7, '2']]]);
    expect(hub.close(b, 8)).toBe(true); // b's one observer left is written alone now, under its own id and filter
    expect(seen(b)).toEqual([[8, 'closed']]);
    hub.broadcast(['x', 'other'], [event('x', '3'), event('other', '4')]);
    expect([seen(a), seen(b), seen(c)]).toEqual([[[7, '3'], [7, '4']], [[9, '4']], [[7, '3'], [7, '4']]]);
    hub.connClosed(a.id);
    hub.add(a, 5, null); // the same connection id again, a new request id
    hub.broadcast(['x'], [event('x', '5')]);
    expect([seen(a), seen(b), seen(c)]).toEqual([[[5, '5']], [], [[7, '5']]]);
    expect(hub.count).toBe(3);
  });

  it('tells a connection past the backlog bound that it is a slow consumer, and drops its events', () => {
    const hub = new ObserverHub(() => {}, Infinity, null, { backlogBytes: 1000, stallMs: 5 });
    const slow = sink(1);
    const fine = sink(2);
    hub.add(slow, 1, null);
    hub.add(fine, 1, null);
    slow.backlogBytes = 1001;
    hub.broadcast(['a'], [encodeBody({ agent_event: { agent: 'a', content: '1' } })]);
    expect(slow.cutAt).toBe(1005);
    expect(slow.frames).toEqual([]);
    expect(fine.cutAt).toBeNull();
    expect(fine.frames).toHaveLength(1);
  });
});
