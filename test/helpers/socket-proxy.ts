/** A Unix socket proxy a test can cut, as a network failure would, without touching the client or the daemon. */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';

export interface Proxy {
  path: string;
  /** Drops every connection through it, as a network failure would. */
  cut(): void;
  /** Stops listening (its socket file goes) and cuts: connecting through it fails from now on. */
  stop(): Promise<void>;
}

let proxies = 0;

/** A Unix socket passing bytes to `target` both ways, so a test can cut the client's connection alone. */
export async function proxy(target: string, dir: string): Promise<Proxy> {
  const path = join(dir, `proxy-${++proxies}.sock`);
  const sockets = new Set<Socket>();
  const server: Server = createServer((down) => {
    const up = createConnection(target);
    for (const s of [down, up]) {
      sockets.add(s);
      s.on('error', () => {}).on('close', () => (down.destroy(), up.destroy(), sockets.delete(s)));
    }
    down.pipe(up).pipe(down);
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  const cut = (): void => {
    for (const s of sockets) s.destroy();
  };
  // close() stops listening at once, and calls back once the connections through it are gone.
  const stop = (): Promise<void> => new Promise<void>((resolve) => (server.listening ? (server.close(() => resolve()), cut()) : resolve()));
  onTestFinished(stop);
  return { path, cut, stop };
}
