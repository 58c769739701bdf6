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
  /** Like call(), and says when the first frame of the reply arrived (hrtime ns). */
  timed(): Promise<{ sent: bigint; first: bigint; last: bigint }>;
  close(): void;
}

function connectOnce(target: string | { host: string; port: number }): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = typeof target === 'string' ? createConnection(target) : createConnection(target);
    s.once('connect', () => {
      s.setNoDelay(true);
      resolve(s);
    });
    s.once('error', reject);
  });
}

/** Connects, retrying while the server's accept backlog is full (EAGAIN on a Unix socket). */
async function connect(target: string | { host: string; port: number }): Promise<Socket> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await connectOnce(target);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN' || attempt >= 50) throw err;
      await new Promise((r) => setTimeout(r, 5 * (attempt + 1)));
    }
  }
}

/** A writer that coalesces every write made in one tick into one syscall (as pipelining clients do). */
function tickWriter(socket: Socket): (bytes: Uint8Array) => void {
  let corked = false;
  const uncork = (): void => {
    corked = false;
    socket.uncork();
  };
  return (bytes) => {
    if (!corked) {
      corked = true;
      socket.cork();
      process.nextTick(uncork);
    }
    socket.write(bytes);
  };
}

/** agentd framing; `body(i)` makes the i-th request body (a template frame is reused when it is constant). */
export async function frameClient(target: string | { host: string; port: number }, body: (i: number) => unknown): Promise<BenchClient> {
  const socket = await connect(target);
  const waiting = new Map<number, (err?: Error) => void>();
  const firsts = new Map<number, bigint>();
  const decoder = new FrameDecoder({
    onFrame: (id, flags) => {
      if (firsts.get(id) === 0n) firsts.set(id, process.hrtime.bigint());
      if ((flags & FLAG_LAST) === 0) return;
      const done = waiting.get(id);
      waiting.delete(id);
      done?.();
    },
    onOversize: () => socket.destroy(),
  }, 1 << 30);
  socket.on('data', (c: Buffer) => decoder.push(c));
  socket.on('error', () => {});
  let closed = false;
  // A server that dies fails the requests it owed, so a run ends with an error instead of waiting forever.
  socket.on('close', () => {
    closed = true;
    for (const fail of waiting.values()) fail(new Error(`the server closed the connection with ${waiting.size} requests unanswered`));
    waiting.clear();
  });
  let next = 0;
  const write = tickWriter(socket);
  const client: BenchClient = {
    async timed() {
      const id = next >>> 0;
      firsts.set(id, 0n);
      const sent = process.hrtime.bigint();
      await client.call();
      const last = process.hrtime.bigint();
      const first = firsts.get(id)!;
      firsts.delete(id);
      return { sent, first, last };
    },
    call() {
      const id = next++ >>> 0;
      const payload = encodeBody(body(id));
      const frame = Buffer.allocUnsafe(HEADER_BYTES + payload.length);
      frame.writeUInt32BE(payload.length, 0);
      frame.writeUInt32BE(id, 4);
      frame[8] = 0;
      frame.set(payload, HEADER_BYTES);
      write(frame);
      if (closed) return Promise.reject(new Error('the connection is closed'));
      return new Promise<void>((resolve, reject) => waiting.set(id, (err) => (err === undefined ? resolve() : reject(err))));
    },
    close: () => socket.destroy(),
  };
  return client;
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
  const write = tickWriter(socket);
  const client: BenchClient = {
    async timed() {
      const sent = process.hrtime.bigint();
      await client.call();
      const last = process.hrtime.bigint();
      return { sent, first: last, last };
    },
    call() {
      write(PING);
      return new Promise<void>((resolve) => waiting.push(resolve));
    },
    close: () => socket.destroy(),
  };
  return client;
}

/** A raw socket that counts what arrives, for fan-out: agentd observers or Redis subscribers. */
export interface Listener {
  /** Resolves once `count` messages matching have arrived since the last reset. */
  waitFor(count: number): Promise<void>;
  reset(): void;
  received(): number;
  lagged(): boolean;
  close(): void;
}

/** Counts arrivals and wakes one waiter once the count reaches what it waits for. */
class Counter {
  n = 0;
  #want = Infinity;
  #wake: (() => void) | null = null;
  #released = false;

  add(k = 1): void {
    this.n += k;
    if (this.n >= this.#want && this.#wake !== null) {
      const w = this.#wake;
      this.#wake = null;
      w();
    }
  }

  waitFor(count: number): Promise<void> {
    if (this.n >= count || this.#released) return Promise.resolve();
    return new Promise<void>((r) => {
      this.#want = count;
      this.#wake = r;
    });
  }

  reset(): void {
    this.n = 0;
    this.#want = Infinity;
    this.#released = false;
  }

  /** Ends the wait, now or when it begins, until the next reset: the count will never come (an observer that lagged lost events). */
  release(): void {
    this.#released = true;
    const w = this.#wake;
    this.#wake = null;
    w?.();
  }
}

function listener(socket: Socket, counter: Counter, lagged: () => boolean): Listener {
  return {
    waitFor: (count) => counter.waitFor(count),
    reset: () => counter.reset(),
    received: () => counter.n,
    lagged,
    close: () => socket.destroy(),
  };
}

/**
 * An agentd observer (subscribe_events) that counts `done` events, or all
 * events with `countAll`. A `lagged` notice (events dropped for this slow
 * observer) ends any wait, since the missing events will never come. It is
 * found by one scan per read, as the Redis subscriber finds its marker, so
 * the two clients do the same work per delivery.
 */
export async function observer(target: string, countAll: boolean): Promise<Listener> {
  const socket = await connect(target);
  const counter = new Counter();
  let lag = false;
  const done = Buffer.from('done');
  const lagged = Buffer.from('lagged');
  const decoder = new FrameDecoder({
    onFrame: countAll ? () => counter.add() : (_id, _flags, body) => Buffer.from(body.buffer, body.byteOffset, body.byteLength).includes(done) && counter.add(),
    onOversize: () => socket.destroy(),
  }, 1 << 30);
  let tail: Buffer = Buffer.alloc(0);
  socket.on('data', (c: Buffer) => {
    decoder.push(c);
    // The notice may be split across two reads: the last bytes of one read are checked with the start of the next.
    const across = tail.length > 0 && Buffer.concat([tail, c.subarray(0, lagged.length - 1)]).includes(lagged);
    if (across || c.includes(lagged)) {
      lag = true;
      counter.release();
    }
    tail = c.subarray(Math.max(0, c.length - (lagged.length - 1)));
  });
  socket.on('error', () => {});
  const sub = encodeBody({ subscribe_events: {} });
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeUInt32BE(sub.length, 0);
  header.writeUInt32BE(1, 4);
  socket.write(Buffer.concat([header, sub]));
  return listener(socket, counter, () => lag);
}

/** A Redis subscriber of `channel` that counts messages. */
export async function redisSubscriber(target: string, channel: string): Promise<Listener> {
  const socket = await connect(target);
  const counter = new Counter();
  const marker = Buffer.from('$7\r\nmessage\r\n');
  // Keeps the last few bytes, so a marker split across two reads is still seen (and never counted twice).
  let tail: Buffer = Buffer.alloc(0);
  socket.on('data', (c: Buffer) => {
    const buf = tail.length > 0 ? Buffer.concat([tail, c]) : c;
    let at = 0;
    for (;;) {
      const i = buf.indexOf(marker, at);
      if (i === -1) break;
      counter.add();
      at = i + marker.length;
    }
    tail = buf.subarray(Math.max(at, buf.length - (marker.length - 1)));
  });
  socket.on('error', () => {});
  await new Promise<void>((resolve) => {
    socket.once('data', () => resolve());
    socket.write(`*2\r\n$9\r\nSUBSCRIBE\r\n$${Buffer.byteLength(channel)}\r\n${channel}\r\n`);
  });
  counter.reset();
  return listener(socket, counter, () => false);
}
