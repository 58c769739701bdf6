/**
 * Prometheus metrics on an HTTP listener of their own (`metrics`, off by
 * default): `GET /metrics` in the text exposition format. On a loopback
 * address anyone local may scrape; elsewhere a scrape must carry the daemon's
 * token as `Authorization: Bearer <token>`. prom-client formats the output and
 * adds the process's own metrics (CPU, memory, heap, event loop lag, GC).
 */
import { chmodSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { isLoopback, type TcpAddress } from '../../shared/config.ts';
import type { Logger } from '../../shared/log.ts';
import { sameSecret } from '../net/token.ts';
import { fromThisMachine } from '../net/same-machine.ts';
import { registerDaemonGauges, type GaugeSources } from './daemon-gauges.ts';
import { TurnMeter } from './turn-meter.ts';
import type { ExtraRoutes } from '../dashboard/dashboard-routes.ts';

export class MetricsService {
  readonly registry = new Registry();
  readonly turns = new TurnMeter(this.registry);
  #refresh: () => Promise<void> = async () => {};
  /** Routes besides /metrics (the dashboard), behind the same auth. */
  #routes: ExtraRoutes | null = null;

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /** The daemon's counters, read at each scrape. */
  attach(sources: GaugeSources): void {
    this.#refresh = registerDaemonGauges(this.registry, sources);
  }

  /** Serves `routes` too (before listen). */
  serve(routes: ExtraRoutes): void {
    this.#routes = routes;
  }

  /** The text a scrape gets. */
  async scrape(): Promise<string> {
    await this.#refresh();
    return this.registry.metrics();
  }

  /** Listens on `addr`; writes the bound port to `portFile`. Refuses a non-loopback address without a token. */
  async listen(addr: TcpAddress, token: string | null, portFile: string, log: Logger): Promise<Server> {
    const open = isLoopback(addr.host);
    if (!open && token === null) throw new Error(`refusing to serve metrics on ${addr.host}:${addr.port} without a token: a non-loopback metrics listener requires one`);
    const server = createServer((req, res) => void this.#answer(req, res, open ? null : token, log));
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) => reject(err.code === 'EADDRINUSE' ? new Error(`metrics ${addr.host}:${addr.port} is already in use; pick another with --metrics HOST:PORT`) : err));
      server.listen(addr.port, addr.host, () => resolve());
    });
    const bound = server.address();
    writeFileSync(portFile, `${typeof bound === 'object' && bound !== null ? bound.port : addr.port}\n`, { mode: 0o600 });
    chmodSync(portFile, 0o600);
    this.#routes?.listening(server);
    return server;
  }

  async #answer(req: IncomingMessage, res: ServerResponse, token: string | null, log: Logger): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (token !== null) {
      const presented = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (presented === undefined || !sameSecret(presented, token)) return plain(res, 401, 'a token is required: Authorization: Bearer <token>\n');
    } else if (!fromThisMachine(req)) {
      return plain(res, 403, 'without a token this listener serves requests to a loopback Host from no other Origin\n');
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return plain(res, 405, 'only GET\n');
    if (path !== '/metrics' && this.#routes?.handle(req, res, path ?? '/') === true) return;
    if (path !== '/metrics') return plain(res, 404, 'not found: the metrics are at /metrics\n');
    try {
      const body = await this.scrape();
      res.writeHead(200, { 'content-type': this.registry.contentType });
      res.end(req.method === 'HEAD' ? undefined : body);
    } catch (err) {
      log.warn({ err }, 'collecting metrics failed');
      plain(res, 500, `collecting metrics failed: ${(err as Error).message}\n`);
    }
  }
}

function plain(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(text);
}
