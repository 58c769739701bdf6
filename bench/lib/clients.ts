/**
 * Minimal pipelining clients for the load generator: one for agentd's
 * framing (agentd and the floor server) and one for Redis RESP. Neither
 * decodes reply bodies: each counts a request done at its LAST frame (or
 * its one RESP reply), so the client costs the same for every system.
 */
import { createConnection, type Socket } from 'node:net';
import { encodeBody, FLAG_LAST, FrameDecoder, HEADER_BYTES } from '../../src/shared/codec.ts';

export interface BenchClient {
  /** Sends one request; resolves when its reply is complete. */
  call(): Promise<void>;
  close(): void;
}

function connect(target: string | { host: string; port: number }): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = typeof target === 'string' ? createConnection(target) : createConnection(target);
    s.once('connect', () => {
      s.setNoDelay(true);
      resolve(s);
    });
    s.once('error', reject);
  });
}

/** agentd framing; `body(i)` makes the i-th request body (a template frame is reused when it is constant). */
export async function frameClient(target: string | { host: string; port: number }, body: (i: number) => unknown): Promise<BenchClient> {
  const socket = await connect(target);
  const waiting = new Map<number, () => void>();
  const decoder = new FrameDecoder({
    onFrame: (id, flags) => {
      if ((flags & FLAG_LAST) === 0) return;
      const done = waiting.get(id);
      waiting.delete(id);
      done?.();
    },
    onOversize: () => socket.destroy(),
  }, 1 << 30);
  socket.on('data', (c: Buffer) => decoder.push(c));
  socket.on('error', () => {});
  let next = 0;
  let corked = false;
  return {
    call() {
      const id = next++ >>> 0;
      const payload = encodeBody(body(id));
      const frame = Buffer.allocUnsafe(HEADER_BYTES + payload.length);
      frame.writeUInt32BE(payload.length, 0);
      frame.writeUInt32BE(id, 4);
      frame[8] = 0;
      frame.set(payload, HEADER_BYTES);
      if (!corked) {
        corked = true;
        socket.cork();
        process.nextTick(() => {
          corked = false;
          socket.uncork();
        });
      }
      socket.write(frame);
      return new Promise<void>((resolve) => waiting.set(id, resolve));
    },
    close: () => socket.destroy(),
  };
}

const PING = Buffer.from('*1\r\n$4\r\nPING\r\n');
const PONG = Buffer.from('+PONG\r\n');

/** Redis PING over RESP: replies are fixed-size, so counting bytes counts replies. */
export async function redisPingClient(target: string | { host: string; port: number }): Promise<BenchClient> {
  const socket = await connect(target);
  const waiting: (() => void)[] = [];
  let head = 0;
  let partial = 0;
  socket.on('data', (c: Buffer) => {
    let bytes = partial + c.length;
    while (bytes >= PONG.length) {
      bytes -= PONG.length;
      waiting[head++]!();
    }
    partial = bytes;
    if (head > 1024 && head * 2 > waiting.length) {
      waiting.splice(0, head);
      head = 0;
    }
  });
  socket.on('error', () => {});
  let corked = false;
  return {
    call() {
      if (!corked) {
        corked = true;
        socket.cork();
        process.nextTick(() => {
          corked = false;
          socket.uncork();
        });
      }
      socket.write(PING);
      return new Promise<void>((resolve) => waiting.push(resolve));
    },
    close: () => socket.destroy(),
  };
}
