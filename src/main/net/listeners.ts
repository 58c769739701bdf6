/**
 * The Unix socket and TCP listeners (PROTOCOL §6). Neither knows the
 * protocol: each hands accepted sockets to `onSocket`.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { isLoopback, type TcpAddress } from '../../shared/config.ts';

export type OnSocket = (socket: Socket, transport: 'unix' | 'tcp') => void;

/**
 * Pending connections the kernel may hold before main accepts them. Node's
 * default (511) makes a burst of connects to a Unix socket fail with EAGAIN
 * while main is busy; the kernel caps this at net.core.somaxconn.
 */
const LISTEN_BACKLOG = 4096;

function listen(server: Server, arg: string | { host: string; port: number }): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    const done = (): void => {
      server.off('error', reject);
      resolve();
    };
    if (typeof arg === 'string') server.listen({ path: arg, backlog: LISTEN_BACKLOG }, done);
    else server.listen({ port: arg.port, host: arg.host, backlog: LISTEN_BACKLOG }, done);
  });
}

/** True if something accepts connections on the socket file now. */
function socketIsLive(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createConnection(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
}

export async function listenUnix(path: string, onSocket: OnSocket): Promise<Server> {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  if (await socketIsLive(path)) {
    throw new Error(`another agentd is already running on ${path}; stop it first or use another --home`);
  }
  rmSync(path, { force: true }); // a dead daemon's socket file
  const server = createServer({ noDelay: true }, (s) => onSocket(s, 'unix'));
  // The umask makes the socket 0600 from its first instant, not after a chmod race.
  const umask = process.umask(0o177);
  try {
    await listen(server, path);
  } finally {
    process.umask(umask);
  }
  chmodSync(path, 0o600);
  return server;
}

export async function listenTcp(addr: TcpAddress, token: string | null, portFile: string, onSocket: OnSocket): Promise<Server> {
  if (!isLoopback(addr.host) && token === null) {
    throw new Error(
      `refusing to listen on ${addr.host}:${addr.port} without a token: --tcp-insecure (tcp_insecure) is for loopback addresses only; drop it, or set "token" in the config or AGENTD_TOKEN`,
    );
  }
  const server = createServer({ noDelay: true }, (s) => {
    s.setNoDelay(true);
    onSocket(s, 'tcp');
  });
  try {
    await listen(server, addr);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'EADDRINUSE') throw new Error(`TCP ${addr.host}:${addr.port} is already in use; pick another with --tcp HOST:PORT (0 for any) or --tcp off`);
    throw err;
  }
  const bound = server.address();
  const port = typeof bound === 'object' && bound !== null ? bound.port : addr.port;
  writeFileSync(portFile, `${port}\n`, { mode: 0o600 });
  chmodSync(portFile, 0o600); // a port file left by an older daemon keeps its mode through a rewrite
  return server;
}

export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}
