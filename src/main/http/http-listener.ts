/**
 * The HTTP listener (`http`, off by default; docs/http.md): HTTP/1.1 with
 * keep-alive on node:http, in front of the same dispatch as the socket
 * protocol. Sockets are admitted by the same connection limiter as TCP
 * (`max_connections` per listener, half of it for sockets that have not
 * authenticated yet); each request authenticates with `Authorization:
 * Bearer <token>` through one `Authenticate` function, and an
 * unauthenticated request gets 401 without its body being read.
 */
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type Server, type Socket } from 'node:net';
import { chmodSync, writeFileSync } from 'node:fs';
import { isLoopback, type TcpAddress } from '../../shared/config.ts';
import { AgentdError, Code } from '../../shared/errors.ts';
import type { Logger } from '../../shared/log.ts';
import { ADMIN, type Authenticate, type Principal } from '../auth/principal.ts';
import type { ConnectionLimiter } from '../net/connection-limit.ts';
import type { Dispatch } from '../dispatch.ts';
import { announcedLength, readJsonObject, sendError, sendJson, tooLarge } from './http-io.ts';
import { fromThisMachine } from '../net/same-machine.ts';
import { HttpRequester, type RequesterHost } from './http-requester.ts';
import type { HttpExchange, HttpRouter } from './router.ts';

export interface HttpListenerOptions {
  addr: TcpAddress;
  /** Resolves a bearer token; null: no token is configured, and every request (loopback only) is the admin. */
  authenticate: Authenticate | null;
  router: HttpRouter;
  limiter: ConnectionLimiter;
  host: RequesterHost;
  dispatch: Dispatch;
  maxBodyBytes: number;
  /** A socket that has not authenticated by then is closed. */
  authTimeoutMs: number;
  /** The bound port is written here (tests listen on port 0). */
  portFile: string;
  log: Logger;
}

export interface HttpListener {
  readonly port: number;
  /** Stops accepting, ends idle keep-alive sockets; `force` cuts the busy ones too. */
  close(force: boolean): Promise<void>;
}

const UNAUTHORIZED = 'authentication required: send Authorization: Bearer <token>';

/** The bearer token of a request, or null when it presents none. */
function bearer(req: IncomingMessage): string | null {
  const h = req.headers.authorization;
  if (h === undefined) return null;
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(h);
  return m === null ? '' : m[1]!;
}

export async function listenHttp(o: HttpListenerOptions): Promise<HttpListener> {
  if (!isLoopback(o.addr.host) && o.authenticate === null) {
    throw new Error(`refusing to serve HTTP on ${o.addr.host}:${o.addr.port} without a token: without one, http is for loopback addresses only; set "token" in the config or AGENTD_TOKEN`);
  }
  const authed = new WeakSet<Socket>();
  const http = createHttpServer({ keepAlive: true, noDelay: true }, (req, res) => void serve(o, authed, req, res, false));
  // `Expect: 100-continue` (curl's large bodies): the client sends its body only once the request is authenticated, routed and under the limit.
  http.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => void serve(o, authed, req, res, true));
  http.headersTimeout = Math.min(o.authTimeoutMs, 60_000);
  http.keepAliveTimeout = 5_000;
  const admit = o.limiter.admit((socket: Socket, _transport: 'http') => {
    if (o.authenticate === null) {
      authed.add(socket);
      o.limiter.authenticated(socket);
    } else {
      setTimeout(() => {
        if (!authed.has(socket)) socket.destroy();
      }, o.authTimeoutMs).unref();
    }
    http.emit('connection', socket);
  });
  const server = createNetServer({ noDelay: true }, (s) => admit(s, 'http'));
  await listen(server, o.addr);
  const bound = server.address();
  const port = typeof bound === 'object' && bound !== null ? bound.port : o.addr.port;
  writeFileSync(o.portFile, `${port}\n`, { mode: 0o600 });
  chmodSync(o.portFile, 0o600);
  o.log.info({ http: `${o.addr.host}:${port}` }, 'HTTP listening');
  return {
    port,
    close: (force) => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      http.closeIdleConnections();
      if (force) http.closeAllConnections();
      return force ? closed : Promise.resolve();
    },
  };
}

function listen(server: Server, addr: TcpAddress): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') reject(new Error(`HTTP ${addr.host}:${addr.port} is already in use; pick another with --http HOST:PORT (0 for any) or --http off`));
      else reject(err);
    });
    server.listen({ port: addr.port, host: addr.host, backlog: 4096 }, () => resolve());
  });
}

async function authenticate(o: HttpListenerOptions, authed: WeakSet<Socket>, req: IncomingMessage): Promise<Principal | string> {
  if (o.authenticate === null) {
    if (fromThisMachine(req)) return ADMIN;
    return 'without a token this door serves requests to a loopback Host from no other Origin (a web page must not drive the daemon)';
  }
  const token = bearer(req);
  if (token === null) return UNAUTHORIZED;
  if (token === '') return 'authentication required: the Authorization header must be "Bearer <token>"';
  const principal = await o.authenticate(token);
  if (principal === null) return 'wrong token';
  authed.add(req.socket);
  o.limiter.authenticated(req.socket);
  return principal;
}

async function serve(o: HttpListenerOptions, authed: WeakSet<Socket>, req: IncomingMessage, res: ServerResponse, expectsContinue: boolean): Promise<void> {
  let url: URL;
  try {
    url = new URL(req.url ?? '/', 'http://agentd');
  } catch {
    return sendError(res, new AgentdError(Code.BadRequest, 'the request target is not a valid URL'), true);
  }
  const found = o.router.match(req.method ?? 'GET', url.pathname);
  let principal: Principal = ADMIN;
  if (found === null || 'allowed' in found || found.route.public !== true) {
    // Unknown routes need the token too: nothing about the routes is told before authentication.
    const who = await authenticate(o, authed, req);
    if (typeof who === 'string') return sendError(res, new AgentdError(Code.Unauthorized, who), true);
    principal = who;
  }
  if (found === null) return sendError(res, new AgentdError(Code.NotFound, `no route ${req.method} ${url.pathname}`));
  if ('allowed' in found) {
    return sendJson(res, 405, { error: { code: 405, message: `${req.method} is not allowed on ${url.pathname}; allowed: ${found.allowed.join(', ')}` } }, { allow: found.allowed.join(', ') });
  }
  const x = exchange(o, { req, res, expectsContinue }, url, found.params, principal);
  try {
    await found.route.handler(req, res, x);
  } catch (err) {
    // A body refused half-read (413) leaves bytes the connection cannot skip: close it.
    sendError(res, err, err instanceof AgentdError && err.code === Code.TooLarge);
  }
}

interface Pending {
  req: IncomingMessage;
  res: ServerResponse;
  /** The client waits for `100 Continue` before it sends the body. */
  expectsContinue: boolean;
}

function exchange(o: HttpListenerOptions, p: Pending, url: URL, params: Record<string, string>, principal: Principal): HttpExchange {
  const { req, res } = p;
  let requester: HttpRequester | null = null;
  const get = (): HttpRequester => {
    if (requester !== null) return requester;
    const r = new HttpRequester(o.host.nextId(), principal, o.dispatch);
    requester = r;
    r.output = res;
    o.host.register(r);
    res.once('close', () => {
      // A response closed before it finished is a client that went away: as a closed socket, its turns are cancelled.
      const gone = !res.writableFinished;
      r.close();
      o.host.closed(r, gone);
    });
    return r;
  };
  return {
    url,
    params,
    principal,
    requester: get,
    call: (op, args) => get().call(op, args),
    readJson: () => {
      const announced = announcedLength(req);
      if (announced !== null && announced > o.maxBodyBytes) return Promise.reject(tooLarge(announced, o.maxBodyBytes));
      if (p.expectsContinue) res.writeContinue();
      p.expectsContinue = false;
      return readJsonObject(req, o.maxBodyBytes);
    },
  };
}
