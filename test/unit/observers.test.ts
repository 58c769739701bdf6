import { describe, expect, it } from 'vitest';
import { ObserverHub, OBSERVER_BACKLOG_BYTES, type ObserverSink } from '../../src/main/bus/observers.ts';
import { decodeBody, encodeBody, FrameDecoder } from '../../src/shared/codec.ts';

/** A fake connection that decodes what is written to it. */
function sink(id: number): ObserverSink & { frames: { id: number; flags: number; body: any }[]; backlogBytes: number } {
  const frames: { id: number; flags: number; body: any }[] = [];
  const decoder = new FrameDecoder({ onFrame: (fid, flags, body) => frames.push({ id: fid, flags, body: decodeBody(body) }), onOversize: () => {} });
  const s = {
    id,
    frames,
    backlogBytes: 0,
    backlog: () => s.backlogBytes,
    write: (frame: Uint8Array) => decoder.push(Buffer.from(frame)),
  };
  return s;
}

const event = (agent: string, content: string) => encodeBody({ agent_event: { agent, content } });

describe('ObserverHub', () => {
  it('tells when the first observer arrives and the last leaves', () => {
    const seen: boolean[] = [];
    const hub = new ObserverHub((w) => seen.push(w));
    const a = sink(1);
    hub.add(a, 5, null);
    hub.add(a, 6, 'x');
    expect(hub.count).toBe(2);
    expect(hub.close(a, 5)).toBe(true);
    expect(hub.close(a, 5)).toBe(false);
    hub.connClosed(1);
    expect(hub.count).toBe(0);
    expect(seen).toEqual([true, false]);
    expect(a.frames).toEqual([{ id: 5, flags: 1, body: { closed: {} } }]);
  });

  it('writes each event under each observer\'s own request id, filtered by agent', () => {
    const hub = new ObserverHub(() => {});
    const all = sink(1);
    const onlyB = sink(2);
    hub.add(all, 3, null);
    hub.add(onlyB, 9, 'b');
    hub.broadcast(['a', 'b', 'a'], [event('a', '1'), event('b', '2'), event('a', '3')]);
    expect(all.frames.map((f) => [f.id, f.flags, f.body.agent_event.content])).toEqual([[3, 0, '1'], [3, 0, '2'], [3, 0, '3']]);
    expect(onlyB.frames.map((f) => [f.id, f.body.agent_event.content])).toEqual([[9, '2']]);
  });

  it('drops events for an observer past its backlog bound, then says how many it lost', () => {
    const hub = new ObserverHub(() => {});
    const slow = sink(1);
    hub.add(slow, 4, null);
    slow.backlogBytes = OBSERVER_BACKLOG_BYTES + 1;
    hub.broadcast(['a', 'a'], [event('a', '1'), event('a', '2')]);
    expect(slow.frames).toEqual([]);
    slow.backlogBytes = 0;
    hub.broadcast(['a'], [event('a', '3')]);
    expect(slow.frames.map((f) => [f.body.agent_event.kind ?? 'event', f.body.agent_event.content])).toEqual([['lagged', '2 events dropped'], ['event', '3']]);
  });

  it('refuses a connection its observer past max_observers (429), re-adding an open id is no new one, and a close frees a slot', () => {
    const hub = new ObserverHub(() => {}, 2);
    const a = sink(1);
    const b = sink(2);
    hub.add(a, 1, null);
    hub.add(a, 2, null);
    hub.add(a, 2, 'x'); // the same request id again replaces, it does not count twice
    expect(() => hub.add(a, 3, null)).toThrow(expect.objectContaining({ code: 429, message: expect.stringMatching(/config key max_observers/) }));
    hub.add(b, 1, null); // another connection has its own allowance
    expect(hub.count).toBe(3);
    hub.close(a, 1);
    hub.add(a, 3, null);
    expect(hub.count).toBe(3);
  });
});
