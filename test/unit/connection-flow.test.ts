/**
 * A connection's output past the hard limit (issue 11: "a reader that keeps
 * reading is never cut off"), over a real Unix socket. One write of many
 * megabytes completes only once the peer has read all of it, so a slow
 * reader can complete no write for longer than STALLED_READER_MS; it was cut
 * off all the same (the e2e slow-reader test failed about one run in three).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection, STALLED_READER_MS, type ConnectionHost } from '../../src/main/net/connection.ts';

const LIMITS = { maxBodyBytes: 1024 * 1024, maxElements: 100_000, highWaterBytes: 65_536, hardLimitBytes: 262_144, token: null, authTimeoutMs: 10_000 };
const BIG_WRITE = 16 * 1024 * 1024;

let cleanup: (() => void)[] = [];
afterEach(() => {
  for (const f of cleanup.reverse()) f();
  cleanup = [];
});

/** A daemon-side Connection and the peer's socket, joined by a Unix socket; `closed` settles when the daemon side closes. */
async function pair(): Promise<{ conn: Connection; peer: Socket; closed: Promise<boolean> }> {
  const dir = mkdtempSync(join(tmpdir(), 'agentd-conn-'));
  const path = join(dir, 's');
  let onClosed!: (cancelTurns: boolean) => void;
  const closed = new Promise<boolean>((r) => (onClosed = r));
  const host: ConnectionHost = { dispatch: () => {}, closed: (_c, cancelTurns) => onClosed(cancelTurns) };
  const server: Server = createServer();
  const accepted = new Promise<Connection>((r) => server.once('connection', (s) => r(new Connection(1, s, 'unix', host, LIMITS))));
  await new Promise<void>((r) => server.listen(path, r));
  const peer = createConnection(path);
  peer.on('error', () => {});
  const conn = await accepted;
  cleanup.push(() => {
    peer.destroy();
    conn.destroy();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { conn, peer, closed };
}

/** Resolves on the peer's next read (one 'data' event) with its size, or with -1 when the stream ends. */
function oneRead(peer: Socket): Promise<number> {
  return new Promise((resolve) => {
    const done = (n: number): void => {
      peer.off('data', onData);
      peer.off('end', onClose);
      peer.off('close', onClose);
      peer.pause();
      resolve(n);
    };
    const onData = (chunk: Buffer): void => done(chunk.length);
    const onClose = (): void => done(-1);
    peer.once('data', onData);
    peer.once('end', onClose);
    peer.once('close', onClose);
    peer.resume();
  });
}

describe('a connection past the hard limit', () => {
  it('is not cut while its peer keeps reading, though one write takes far longer than STALLED_READER_MS to complete', { timeout: 60_000 }, async () => {
    const { conn, peer } = await pair();
    peer.pause();
    conn.write(Buffer.alloc(BIG_WRITE, 0x61)); // one write: 64x the hard limit
    let received = 0;
    const started = Date.now();
    while (received < BIG_WRITE) {
      const n = await oneRead(peer);
      expect(n, `cut off after ${received} bytes, ${Date.now() - started} ms`).toBeGreaterThan(0);
      received += n;
      expect(conn.open, `cut off after ${received} bytes, ${Date.now() - started} ms`).toBe(true);
      // Far slower than the socket: a few MB/s at most, so the write stays in flight for seconds.
      await new Promise((r) => setTimeout(r, 30));
    }
    expect(received).toBe(BIG_WRITE);
    expect(conn.open).toBe(true);
  });

  it('is cut when its peer reads nothing for STALLED_READER_MS, and its turns are cancelled', { timeout: 60_000 }, async () => {
    const { conn, peer, closed } = await pair();
    peer.pause(); // never reads
    conn.write(Buffer.alloc(BIG_WRITE, 0x61));
    const started = Date.now();
    expect(await closed).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(STALLED_READER_MS - 50);
  });
});

describe('a write’s completion (what hands output buffers back to their shard)', () => {
  it('is reported once the peer has taken the bytes, when the socket is destroyed with them queued, and at once on a closed connection', async () => {
    const { conn, peer, closed } = await pair();
    peer.pause();
    const MIB = 1024 * 1024; // more than a Unix socket's kernel buffers hold: completes only as the peer reads
    let first = false;
    const firstWritten = new Promise<void>((r) => conn.write(Buffer.alloc(MIB, 0x61), () => ((first = true), r())));
    await new Promise((r) => setImmediate(r));
    expect(first).toBe(false);
    let read = 0;
    peer.on('data', (chunk: Buffer) => (read += chunk.length));
    peer.resume();
    await firstWritten;
    peer.pause();
    peer.removeAllListeners('data');
    expect(read).toBeGreaterThan(0);

    const queuedWritten = new Promise<void>((r) => conn.write(Buffer.alloc(4 * MIB, 0x62), () => r()));
    conn.destroy();
    await queuedWritten;
    await closed;
    let atOnce = false;
    conn.write(Buffer.alloc(10), () => (atOnce = true));
    expect(atOnce).toBe(true);
  });
});

describe('a connection that is ending', () => {
  it('drops a later write (reported written) and still delivers everything queued before the end', async () => {
    const { conn, peer } = await pair();
    peer.pause();
    const MIB = 1024 * 1024;
    conn.write(Buffer.alloc(MIB, 0x61)); // still queued when the connection ends
    conn.end();
    let reported = false;
    conn.write(Buffer.alloc(10, 0x62), () => (reported = true)); // a shard's output arriving during the linger
    expect(reported).toBe(true);
    let received = 0;
    let sawOther = false;
    const ended = new Promise<string>((resolve) => {
      peer.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (chunk.includes(0x62)) sawOther = true;
      });
      peer.once('end', () => resolve('end'));
      peer.once('error', (err) => resolve(`error: ${err.message}`));
    });
    peer.resume();
    expect(await ended).toBe('end');
    expect(received).toBe(MIB);
    expect(sawOther).toBe(false);
  });
});
