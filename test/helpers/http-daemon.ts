/**
 * A daemon with its HTTP door open (`--http 127.0.0.1:0`) for the current
 * test: its base URL and the home's token, for the ecosystem tests' clients.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { testDaemon, type Daemon, type DaemonOptions } from './daemon.ts';

export interface HttpDaemon {
  daemon: Daemon;
  /** `http://127.0.0.1:PORT` */
  base: string;
  token: string;
}

export async function testHttpDaemon(opts: DaemonOptions = {}): Promise<HttpDaemon> {
  return httpParts(await testDaemon({ ...opts, args: [...(opts.args ?? []), '--http', '127.0.0.1:0'] }));
}

/** The base URL and token of a daemon started with `--http 127.0.0.1:0`. */
export function httpParts(daemon: Daemon): HttpDaemon {
  const port = Number(readFileSync(join(daemon.home, 'run', 'http.port'), 'utf8').trim());
  const token = readFileSync(join(daemon.home, 'token'), 'utf8').trim();
  return { daemon, base: `http://127.0.0.1:${port}`, token };
}
