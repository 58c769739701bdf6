/**
 * The live dashboard on the metrics listener (its auth applies first):
 * `GET /` the page, its script and style, uPlot (served from its npm
 * package: no CDN, nothing outside is reached), `GET /snapshot` one
 * snapshot as JSON, and `GET /events` a server-sent event stream with a
 * snapshot every second. One snapshot is computed per second however many
 * pages watch, and at most MAX_EVENT_CLIENTS streams are open at once.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Logger } from '../../shared/log.ts';
import type { Dashboard } from '../../shared/wire/dashboard.ts';

export const MAX_EVENT_CLIENTS = 16;
/** A stream whose unsent snapshots pass this is a reader that stopped reading: it is closed. */
const MAX_UNSENT_BYTES = 4 * 1024 * 1024;
const TICK_MS = 1000;

/** Routes a listener serves besides its own; `handle` answers true when it took the request. */
export interface ExtraRoutes {
  handle(req: IncomingMessage, res: ServerResponse, path: string): boolean;
  /** The listener is up: long-lived responses must end when it closes. */
  listening(server: Server): void;
}

// The page's files stay in src/ (tsc copies no .html); from dist/src/main/dashboard/ they are four levels up.
const FROM_SOURCE = import.meta.url.endsWith('.ts');
const pageFile = (name: string): string => fileURLToPath(new URL(FROM_SOURCE ? `./${name}` : `../../../../src/main/dashboard/${name}`, import.meta.url));
const uplotFile = (name: string): string => createRequire(import.meta.url).resolve(`uplot/dist/${name}`);

const ASSETS: Record<string, { file: () => string; type: string }> = {
  '/': { file: () => pageFile('page.html'), type: 'text/html; charset=utf-8' },
  '/dashboard.js': { file: () => pageFile('page.js'), type: 'text/javascript; charset=utf-8' },
  '/dashboard.css': { file: () => pageFile('page.css'), type: 'text/css; charset=utf-8' },
  '/uplot.js': { file: () => uplotFile('uPlot.iife.min.js'), type: 'text/javascript; charset=utf-8' },
  '/uplot.css': { file: () => uplotFile('uPlot.min.css'), type: 'text/css; charset=utf-8' },
};

const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'self'; img-src 'self' data:",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

export class DashboardRoutes implements ExtraRoutes {
  readonly #take: () => Promise<Dashboard>;
  readonly #log: Logger;
  readonly #cache = new Map<string, Buffer>();
  readonly #streams = new Set<ServerResponse>();
  #latest: { at: number; snapshot: Promise<Dashboard> } | null = null;
  #timer: NodeJS.Timeout | null = null;

  constructor(take: () => Promise<Dashboard>, log: Logger) {
    this.#take = take;
    this.#log = log;
  }

  /** The snapshot of this second: computed once, shared by every reader. */
  snapshot(): Promise<Dashboard> {
    const now = Date.now();
    if (this.#latest === null || now - this.#latest.at >= TICK_MS) this.#latest = { at: now, snapshot: this.#take() };
    return this.#latest.snapshot;
  }

  handle(req: IncomingMessage, res: ServerResponse, path: string): boolean {
    const asset = ASSETS[path === '/index.html' ? '/' : path];
    if (asset !== undefined) {
      this.#asset(req, res, path, asset);
      return true;
    }
    if (path === '/snapshot') {
      void this.#snapshotReply(req, res);
      return true;
    }
    if (path === '/events') {
      this.#openStream(req, res);
      return true;
    }
    return false;
  }

  listening(server: Server): void {
    // server.close() waits for every connection to end: the event streams end first.
    const close = server.close.bind(server);
    server.close = (cb?: (err?: Error) => void) => {
      this.#closeAll();
      return close(cb);
    };
  }

  #asset(req: IncomingMessage, res: ServerResponse, path: string, asset: { file: () => string; type: string }): void {
    let body = this.#cache.get(path);
    if (body === undefined) {
      try {
        body = readFileSync(asset.file());
      } catch (err) {
        this.#log.warn({ err, path }, 'a dashboard file is missing');
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(`the dashboard's file for ${path} is missing from this installation: ${(err as Error).message}\n`);
        return;
      }
      this.#cache.set(path, body);
    }
    res.writeHead(200, { 'content-type': asset.type, 'content-length': body.length, 'cache-control': 'no-cache', ...SECURITY_HEADERS });
    res.end(req.method === 'HEAD' ? undefined : body);
  }

  async #snapshotReply(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const body = JSON.stringify(await this.snapshot());
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : body);
    } catch (err) {
      this.#log.warn({ err }, 'taking a dashboard snapshot failed');
      res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`taking a snapshot failed: ${(err as Error).message}\n`);
    }
  }

  #openStream(req: IncomingMessage, res: ServerResponse): void {
    if (this.#streams.size >= MAX_EVENT_CLIENTS) {
      res.writeHead(429, { 'content-type': 'text/plain; charset=utf-8', 'retry-after': '5' });
      res.end(`too many dashboard streams: at most ${MAX_EVENT_CLIENTS} are open at once\n`);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    if (req.method === 'HEAD') return void res.end();
    res.write('retry: 2000\n\n');
    this.#streams.add(res);
    res.on('close', () => {
      this.#streams.delete(res);
      if (this.#streams.size === 0) this.#stopTicking();
    });
    void this.#send([res]);
    this.#timer ??= setInterval(() => void this.#send([...this.#streams]), TICK_MS);
  }

  async #send(to: ServerResponse[]): Promise<void> {
    let data: string;
    try {
      data = `event: snapshot\ndata: ${JSON.stringify(await this.snapshot())}\n\n`;
    } catch (err) {
      this.#log.warn({ err }, 'taking a dashboard snapshot failed');
      return;
    }
    for (const res of to) {
      if (res.writableEnded || res.destroyed) continue;
      if (res.writableLength > MAX_UNSENT_BYTES) res.destroy();
      else res.write(data);
    }
  }

  #stopTicking(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  #closeAll(): void {
    this.#stopTicking();
    for (const res of this.#streams) res.end();
    this.#streams.clear();
  }
}
