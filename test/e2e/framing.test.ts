/** PROTOCOL §1–2 over a real socket: framing, malformed input, error replies. */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { encodeBody, encodeFrame } from '../../src/shared/codec.ts';
import { cleanup, startDaemon, testClient, testDaemon, waitFor, type Daemon } from '../helpers/daemon.ts';
import { RawConn } from '../helpers/raw.ts';

let d: Daemon;
beforeAll(async () => {
  d = await startDaemon({
    config: {
      max_body_bytes: 65536,
      agents: { assistant: { model: 'echo' }, slow: { model: 'echo', echo: { delay_ms: 40 } } },
    },
  });
});
afterAll(() => cleanup(d));

async function raw(): Promise<RawConn> {
  const c = await RawConn.open(d.socketPath);
  onTestFinished(() => c.close());
  return c;
}

const lastFrames = (c: RawConn, id: number): number => c.frames.filter((f) => f.id === id && f.last).length;

describe('framing', () => {
  it('answers ping with pong and LAST', async () => {
    const c = await raw();
    c.send(0, { ping: {} });
    expect(await c.request(0)).toEqual([{ id: 0, last: true, body: { pong: {} } }]);
  });

  it('reads frames split across writes, byte by byte', async () => {
    const c = await raw();
    const bytes = Buffer.concat([encodeFrame(1, 0, encodeBody({ ping: {} })), encodeFrame(2, 0, encodeBody({ stream: { agent: 'assistant', content: 'split frames work' } }))]);
    for (let i = 0; i < bytes.length; i++) {
      c.write(bytes.subarray(i, i + 1));
      if (i % 7 === 0) await new Promise((r) => setImmediate(r));
    }
    await c.request(1);
    const turn = await c.request(2);
    expect(turn.at(-1)!.body.stream.end.stop_reason).toBe('text');
  });

  it('reads many frames in one write and answers each exactly once with LAST', async () => {
    const c = await raw();
    const frames: Buffer[] = [];
    for (let id = 100; id < 150; id++) frames.push(encodeFrame(id, 0, encodeBody(id % 2 ? { ping: {} } : { stream: { agent: 'assistant', content: `n ${id}` } })));
    c.write(Buffer.concat(frames));
    await c.until((fs) => fs.filter((f) => f.last).length === 50, '50 LAST frames');
    for (let id = 100; id < 150; id++) expect(lastFrames(c, id)).toBe(1);
    // nothing follows a LAST: a barrier ping proves the stream is quiet
    c.send(999, { ping: {} });
    await c.request(999);
    for (let id = 100; id < 150; id++) {
      const fs = c.frames.filter((f) => f.id === id);
      expect(fs.at(-1)!.last).toBe(true);
    }
  });

  const bad: [string, Buffer, RegExp][] = [
    ['a zero-length body', encodeFrame(5, 0, new Uint8Array(0)), /not valid MessagePack/],
    ['invalid msgpack', encodeFrame(5, 0, Buffer.from([0xc1])), /not valid MessagePack/],
    ['a truncated msgpack value', encodeFrame(5, 0, Buffer.from([0x82, 0xa1])), /not valid MessagePack/],
    ['a non-map body (array)', encodeFrame(5, 0, encodeBody([1, 2])), /must be a map/],
    ['a non-map body (string)', encodeFrame(5, 0, encodeBody('ping')), /must be a map/],
    ['an empty operation map', encodeFrame(5, 0, encodeBody({})), /exactly one operation; got no operation/],
    ['two operations', encodeFrame(5, 0, encodeBody({ ping: {}, get_stats: {} })), /exactly one operation; got 2/],
    ['an unknown operation', encodeFrame(5, 0, encodeBody({ fly: {} })), /unknown operation "fly"/],
    ['an argument that is not a map', encodeFrame(5, 0, encodeBody({ ping: 1 })), /argument of "ping" must be a map/],
  ];
  for (const [name, frame, message] of bad) {
    it(`answers ${name} with one 400 and keeps the connection usable`, async () => {
      const c = await raw();
      c.write(frame);
      const [reply] = await c.request(5);
      expect(reply!.body.error.code).toBe(400);
      expect(reply!.body.error.message).toMatch(message);
      c.send(6, { ping: {} });
      expect((await c.request(6))[0]!.body).toEqual({ pong: {} });
      expect(lastFrames(c, 5)).toBe(1);
    });
  }

  it('answers an oversize frame with 413 and closes, without losing a running turn', async () => {
    const c = await raw();
    c.send(1, { stream: { agent: 'slow', sender: 'oversize', content: 'one two three four five' } });
    await c.until((fs) => fs.some((f) => f.id === 1 && f.body.stream?.chunk), 'first chunk');
    const header = Buffer.alloc(9);
    header.writeUInt32BE(65537, 0);
    header.writeUInt32BE(77, 4);
    c.write(header);
    await c.waitClosed();
    const reply = c.frames.find((f) => f.id === 77)!;
    expect(reply).toMatchObject({ last: true, body: { error: { code: 413 } } });

    // The turn ran on: a second turn on the pair sees its full history.
    const client = await d.client();
    onTestFinished(() => client.close());
    const r = await client.send('slow', 'six', { sender: 'oversize' });
    expect(r.usage.prompt_tokens).toBe(5 + 5 + 1);
  });
});

describe('request validation', () => {
  const cases: [string, Record<string, unknown>, number, RegExp][] = [
    ['cwd on stream', { stream: { agent: 'assistant', content: 'x', cwd: '/tmp' } }, 400, /stream\.cwd is not accepted/],
    ['tools on send', { send: { agent: 'assistant', content: 'x', tools: [] } }, 400, /send\.tools is not accepted/],
    ['a missing agent', { stream: { content: 'x' } }, 400, /stream\.agent is required/],
    ['a mistyped content', { stream: { agent: 'assistant', content: 5 } }, 400, /stream\.content must be a string/],
    ['a bad on_busy', { stream: { agent: 'assistant', content: 'x', on_busy: 'later' } }, 400, /stream\.on_busy must be one of/],
    ['a bad correlation_id', { stream: { agent: 'assistant', content: 'x', correlation_id: -1 } }, 400, /correlation_id/],
    ['an unknown agent on stream', { stream: { agent: 'nobody', content: 'x' } }, 404, /unknown agent "nobody"/],
    ['an unknown agent on send', { send: { agent: 'nobody', content: 'x' } }, 404, /unknown agent/],
    ['kill of a pair with no conversation', { kill: { agent: 'assistant', sender: 'never-seen' } }, 404, /no conversation/],
  ];
  for (const [name, body, code, message] of cases) {
    it(`refuses ${name} with ${code} before any start`, async () => {
      const c = await raw();
      c.send(9, body);
      const frames = await c.request(9);
      expect(frames).toHaveLength(1);
      expect(frames[0]!.body.error.code).toBe(code);
      expect(frames[0]!.body.error.message).toMatch(message);
    });
  }

  it('ignores unknown keys inside an argument map', async () => {
    const c = await raw();
    c.send(1, { ping: { extra: true } });
    expect((await c.request(1))[0]!.body).toEqual({ pong: {} });
  });

  it('counts connections in stats', async () => {
    const own = await testDaemon({ config: { agents: { assistant: { model: 'echo' }, slow: { model: 'echo' } } } });
    const a = await testClient(own);
    const count = async (): Promise<number> => (await a.stats()).connections as number;
    // The start-up probe's connection may still be closing: wait until `a` is the only one.
    await waitFor(async () => (await count()) === 1, 'one connection');
    const b = await own.client();
    await waitFor(async () => (await count()) === 2, 'a second connection');
    await b.close();
    await waitFor(async () => (await count()) === 1, 'the second connection to be gone');
    const s = await a.stats();
    expect(s).toMatchObject({ workers: 2, registered_agents: 2, active_model: 'echo', subscriptions: 0 });
    expect(typeof s.version).toBe('string');
  });
});
