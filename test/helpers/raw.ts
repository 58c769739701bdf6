/** A bare socket that speaks frames by hand, for tests of the framing rules themselves. */
import { createConnection, type Socket } from 'node:net';
import { decodeBody, encodeBody, encodeFrame, FLAG_LAST, FrameDecoder } from '../../src/shared/codec.ts';
import { assertPortableMsgpack } from '../../src/shared/portable-msgpack.ts';

export interface RawFrame {
  id: number;
  last: boolean;
  body: Record<string, any>;
}

export class RawConn {
  readonly socket: Socket;
  readonly frames: RawFrame[] = [];
  closed = false;
  #waiters: (() => void)[] = [];

  private constructor(socket: Socket) {
    this.socket = socket;
    const decoder = new FrameDecoder(
      {
        onFrame: (id, flags, body) => {
          assertPortableMsgpack(body); // every byte the daemon sends must be portable
          this.frames.push({ id, last: (flags & FLAG_LAST) !== 0, body: decodeBody(body) as Record<string, any> });
          this.#wake();
        },
        onOversize: () => {
          throw new Error('daemon sent an oversize frame');
        },
      },
      256 * 1024 * 1024,
    );
    socket.on('data', (c: Buffer) => decoder.push(c));
    socket.on('error', () => {});
    socket.on('close', () => {
      this.closed = true;
      this.#wake();
    });
  }

  static open(path: string): Promise<RawConn> {
    return new Promise((resolve, reject) => {
      const s = createConnection(path);
      s.once('connect', () => resolve(new RawConn(s)));
      s.once('error', reject);
    });
  }

  static openTcp(port: number): Promise<RawConn> {
    return new Promise((resolve, reject) => {
      const s = createConnection({ host: '127.0.0.1', port });
      s.once('connect', () => resolve(new RawConn(s)));
      s.once('error', reject);
    });
  }

  #wake(): void {
    const w = this.#waiters;
    this.#waiters = [];
    for (const f of w) f();
  }

  send(id: number, body: unknown): void {
    this.socket.write(encodeFrame(id, 0, encodeBody(body)));
  }

  write(bytes: Uint8Array): void {
    this.socket.write(bytes);
  }

  /** Waits until `pred` holds over the frames received (or the deadline passes). */
  async until(pred: (frames: RawFrame[]) => boolean, what = 'frames', timeoutMs = 10_000): Promise<RawFrame[]> {
    const deadline = Date.now() + timeoutMs;
    while (!pred(this.frames)) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.frames.slice(-5))}`);
      await new Promise<void>((r) => {
        this.#waiters.push(r);
        setTimeout(r, 50);
      });
    }
    return this.frames;
  }

  /** Waits for the LAST frame of request `id` and returns that request's frames. */
  async request(id: number): Promise<RawFrame[]> {
    await this.until((fs) => fs.some((f) => f.id === id && f.last), `LAST of request ${id}`);
    return this.frames.filter((f) => f.id === id);
  }

  async waitClosed(timeoutMs = 10_000): Promise<void> {
    await this.until(() => this.closed, 'close', timeoutMs);
  }

  close(): void {
    this.socket.destroy();
  }
}
