/**
 * Forwarding between nodes over NATS (src/cluster/forward.ts): two
 * "nodes" in this process, each on a NATS connection of its own. Without a
 * NATS server: fails under CI, skipped elsewhere, saying why.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { afterEach, describe, expect, it } from 'vitest';
import { ForwardClient, ForwardError, ForwardServer, type ForwardReply } from '../../src/cluster/forward.ts';
import { createLogger } from '../../src/shared/log.ts';
import { waitFor } from '../helpers/daemon.ts';
import { natsConnection, needNats, testBucket } from '../helpers/nats.ts';

const log = createLogger('silent');
const skip = await needNats();

const enc = new TextEncoder();
const dec = new TextDecoder();

interface Outcome {
  frames: string[];
  ended: boolean;
  error: ForwardError | null;
}

describe.skipIf(skip !== null)('forwarding a call to a partition’s owner over NATS', () => {
  const connections: NatsConnection[] = [];
  afterEach(async () => {
    for (const nc of connections.splice(0)) await nc.close().catch(() => undefined);
  });
  async function nc(): Promise<NatsConnection> {
    const c = await natsConnection();
    connections.push(c);
    return c;
  }

  /** A client call whose outcome the test reads; `take` decides whether each frame is taken (false: the client is slow). */
  function calling(client: ForwardClient, partition: number, body: string, take: (frame: string) => boolean = () => true) {
    const out: Outcome = { frames: [], ended: false, error: null };
    const call = client.call(partition, enc.encode(body), {
      frame: (bytes) => {
        const f = dec.decode(bytes);
        out.frames.push(f);
        return take(f);
      },
      end: () => (out.ended = true),
      fail: (err) => (out.error = err),
    });
    return { out, call };
  }

  it('brings every frame of every call back in order, and the end after the last', async () => {
    const prefix = testBucket();
    const server = new ForwardServer(await nc(), prefix, 'owner', (partition, body, reply) => {
      const n = Number(dec.decode(body));
      for (let i = 0; i < n; i++) reply.write(enc.encode(`${partition}:${i}`));
      reply.end();
    }, log);
    server.serve(5);
    server.serve(6);
    const client = new ForwardClient(await nc(), prefix, 'entry', 8);
    const calls = [calling(client, 5, '300'), calling(client, 6, '0'), calling(client, 5, '1')];
    await waitFor(() => calls.every((c) => c.out.ended || c.out.error !== null), 'every call to end');
    expect(calls.map((c) => c.out.error)).toEqual([null, null, null]);
    expect(calls[0]!.out.frames).toEqual(Array.from({ length: 300 }, (_, i) => `5:${i}`));
    expect(calls[1]!.out.frames).toEqual([]);
    expect(calls[2]!.out.frames).toEqual(['5:0']);
    expect(calls[0]!.call.owner).toBe('owner');
    await waitFor(() => server.size === 0 && client.size === 0, 'both sides to forget the calls');
  });

  it('holds the owner back while the client takes no frames, and lets it go on once the client resumes', async () => {
    const prefix = testBucket();
    const window = 4;
    let paused = 0;
    const server = new ForwardServer(await nc(), prefix, 'owner', (_p, _body, reply: ForwardReply) => {
      let i = 0;
      const pump = (): void => {
        while (i < 100) {
          const more = reply.write(enc.encode(String(i++)));
          if (!more) {
            paused++;
            return;
          }
        }
        reply.end();
      };
      reply.onDrain(pump);
      pump();
    }, log);
    server.serve(1);
    const client = new ForwardClient(await nc(), prefix, 'entry', window);
    let slow = true;
    const { out, call } = calling(client, 1, '', () => !slow);
    await waitFor(() => out.frames.length === window, 'the first window of frames');
    // The owner stopped: nothing beyond the window arrives while the client holds its acknowledgements.
    await waitFor(() => paused === 1, 'the owner to be held back');
    expect(out.frames).toEqual(['0', '1', '2', '3']);
    slow = false;
    call.resume();
    await waitFor(() => out.ended, 'the call to end');
    expect(out.frames).toEqual(Array.from({ length: 100 }, (_, i) => String(i)));
    expect(paused).toBeGreaterThan(1);
  });

  it('tells the owner when the client cancels, and delivers nothing after', async () => {
    const prefix = testBucket();
    let cancelled = false;
    let reply: ForwardReply | null = null;
    const server = new ForwardServer(await nc(), prefix, 'owner', (_p, _body, r) => {
      reply = r;
      r.onCancel(() => (cancelled = true));
      r.write(enc.encode('first'));
    }, log);
    server.serve(2);
    const client = new ForwardClient(await nc(), prefix, 'entry');
    const { out, call } = calling(client, 2, '');
    await waitFor(() => out.frames.length === 1, 'the first frame');
    call.cancel();
    await waitFor(() => cancelled, 'the owner to hear of the cancel');
    expect(reply!.write(enc.encode('second'))).toBe(false);
    reply!.end();
    expect(out).toEqual({ frames: ['first'], ended: false, error: null });
    expect(server.size).toBe(0);
  });

  it('fails a call no node serves, and one the owner stopped serving, as unserved', async () => {
    const prefix = testBucket();
    const owner = await nc();
    const server = new ForwardServer(owner, prefix, 'owner', (_p, _b, r) => r.end(), log);
    const client = new ForwardClient(await nc(), prefix, 'entry');
    const none = calling(client, 9, '');
    await waitFor(() => none.out.error !== null, 'the call to fail');
    expect(none.out.error!.reason).toBe('unserved');
    expect(none.out.error!.message).toMatch(/no node serves partition 9 now/);
    server.serve(9);
    // The owner's subscription reaches the NATS server on its own connection: a call sent on the entry's
    // connection before the server has it finds no subscriber (seen under a loaded test run).
    await owner.flush();
    const served = calling(client, 9, '');
    await waitFor(() => served.out.ended, 'the served call to end');
    server.unserve(9);
    const after = calling(client, 9, '');
    await waitFor(() => after.out.error !== null, 'the call after unserve to fail');
    expect(after.out.error!.reason).toBe('unserved');
  });

  it('fails the calls of an owner that is lost, and cancels on the owner the calls of an entry node that is lost', async () => {
    const prefix = testBucket();
    let cancels = 0;
    const server = new ForwardServer(await nc(), prefix, 'owner', (_p, _b, r) => {
      r.onCancel(() => cancels++);
      r.write(enc.encode('started'));
    }, log);
    server.serve(3);
    const client = new ForwardClient(await nc(), prefix, 'entry');
    const a = calling(client, 3, '');
    const b = calling(client, 3, '');
    await waitFor(() => a.out.frames.length === 1 && b.out.frames.length === 1, 'both calls to start');
    client.ownerLost('someone-else', 'not this one');
    expect(a.out.error).toBeNull();
    client.ownerLost('owner', 'node owner failed; whether the turn was stored is unknown');
    expect(a.out.error?.reason).toBe('lost');
    expect(b.out.error?.message).toBe('node owner failed; whether the turn was stored is unknown');
    expect(client.size).toBe(0);
    expect(server.size).toBe(2);
    server.entryLost('entry');
    expect(cancels).toBe(2);
    expect(server.size).toBe(0);
  });
});
