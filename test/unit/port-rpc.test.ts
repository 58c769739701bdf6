import { describe, expect, it } from 'vitest';
import { MessageChannel } from 'node:worker_threads';
import { PendingReplies, PortRpc } from '../../src/shared/threads/port-rpc.ts';

describe('PortRpc', () => {
  it('settles each request by the id of its reply, in any order', async () => {
    const { port1, port2 } = new MessageChannel();
    port2.on('message', (m: { id: number; n: number }) => port2.postMessage({ id: m.id, doubled: m.n * 2 }));
    const rpc = new PortRpc<{ n: number }, { id: number; doubled: number }>(port1, () => new Error('gone'));
    const answers = await Promise.all([rpc.request({ n: 1 }), rpc.request({ n: 5 })]);
    expect(answers.map((a) => a.doubled)).toEqual([2, 10]);
    rpc.close(new Error('done'));
    port2.close();
  });

  it('rejects what waits, and every later request, once the other side closes its port', async () => {
    const { port1, port2 } = new MessageChannel();
    const rpc = new PortRpc<{ n: number }, { id: number }>(port1, () => new Error('the other side is gone'));
    const waiting = rpc.request({ n: 1 });
    port2.close();
    await expect(waiting).rejects.toThrow('the other side is gone');
    await expect(rpc.request({ n: 2 })).rejects.toThrow('the other side is gone');
  });

  it('rejects at once with the abort reason and tells the other side which request ended', async () => {
    const { port1, port2 } = new MessageChannel();
    const seen: unknown[] = [];
    port2.on('message', (m) => seen.push(m));
    const rpc = new PortRpc<{ n: number }, { id: number }>(port1, () => new Error('gone'));
    const abort = new AbortController();
    const cancelled = new Promise<number>((resolve) => {
      void rpc.request({ n: 1 }, abort.signal, resolve).catch((err: Error) => seen.push(err.message));
    });
    abort.abort(new Error('turn cancelled'));
    expect(await cancelled).toBe(1);
    await Promise.resolve();
    expect(seen).toContain('turn cancelled');
    rpc.close(new Error('done'));
    port2.close();
  });
});

describe('PendingReplies', () => {
  it('keeps an abandoned call open and timed until its end, without settling its caller twice', async () => {
    const pending = new PendingReplies<string, { what: string }>();
    const { id, promise } = pending.open({ what: 'a tool' });
    pending.abandon(id, new Error('cancelled'));
    await expect(promise).rejects.toThrow('cancelled');
    expect(pending.awaited(id)).toBe(false);
    expect(pending.meta(id)).toEqual({ what: 'a tool' });
    expect(pending.resolve(id, 'late')).toBe(true);
    expect(pending.size).toBe(0);
  });

  it('hands an expired call to its owner, who decides its fate', async () => {
    const pending = new PendingReplies<string>();
    const { promise } = pending.open(undefined, { ms: 1, onExpiry: (id) => pending.reject(id, new Error(`call ${id} ran out`)) });
    await expect(promise).rejects.toThrow('call 1 ran out');
  });

  it('fails or answers every open call at once', async () => {
    const pending = new PendingReplies<number[]>();
    const a = pending.open(undefined).promise;
    const b = pending.open(undefined).promise;
    pending.resolveAll([]);
    expect(await Promise.all([a, b])).toEqual([[], []]);
    const c = pending.open(undefined).promise;
    pending.rejectAll((id) => new Error(`lost ${id}`));
    await expect(c).rejects.toThrow('lost 3');
  });
});
