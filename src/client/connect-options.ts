/**
 * Where the client connects when told little or nothing: the one place that
 * turns partial options (and the environment) into an address.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { RetryOptions } from './retry.ts';
import { readLocalToken } from './token-file.ts';

export interface ConnectOptions {
  /** Unix socket path. With neither `path` nor `host`/`port`: `<home>/run/agentd.sock`. */
  path?: string;
  /** The daemon's home: its socket is found there, and over TCP without `token` its token file; default `$AGENTD_HOME`, else `~/.agentd`. */
  home?: string;
  host?: string;
  port?: number;
  /** Sent as `auth` first on TCP. */
  token?: string;
  /** Default 5000. */
  connectTimeoutMs?: number;
  /** Largest reply body accepted, in bytes; default 256 MiB. */
  maxBodyBytes?: number;
  /**
   * After a lost connection, the next call connects (and authenticates) again
   * instead of failing; requests open at the loss still fail with
   * ConnectionClosedError. Default false: a lost connection closes the client.
   */
  reconnect?: boolean;
  /** How `send` retries a 503 or a lost connection unless told otherwise per call; default: no retry. */
  retry?: RetryOptions;
  /** Sees every frame's raw body before it is decoded (for protocol tests and debugging). */
  onRawFrame?: (id: number, flags: number, body: Uint8Array) => void;
}

/** The daemon's home: `home`, else `$AGENTD_HOME`, else `~/.agentd`. */
export function defaultHome(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.AGENTD_HOME;
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : join(homedir(), '.agentd');
}

/**
 * Fills in the address: an explicit `path` or `host`/`port` is kept as given;
 * otherwise the Unix socket `<home>/run/agentd.sock`. Over TCP without a
 * `token`, the token is read from the home's token file (the one the daemon
 * creates when no token is configured), when `home` is given.
 */
export function resolveConnectOptions(opts: ConnectOptions = {}, env: NodeJS.ProcessEnv = process.env): ConnectOptions {
  if (opts.path !== undefined) return opts;
  if (opts.host !== undefined || opts.port !== undefined) {
    const token = opts.token ?? (opts.home !== undefined ? readLocalToken(opts.home) : undefined);
    return token === undefined ? opts : { ...opts, token };
  }
  const home = opts.home ?? defaultHome(env);
  return { ...opts, path: join(home, 'run', 'agentd.sock') };
}
