/**
 * Where the daemon stores conversations, agents and subscriptions: the
 * `store` key of agentd.json or `agentd --store URL`. SQLite in a file
 * (the default, $AGENTD_HOME/agentd.db) or a PostgreSQL server, which
 * several nodes can share.
 */
import { isAbsolute, join } from 'node:path';
import { ConfigError } from './errors.ts';
import { withoutPassword } from './redact.ts';

export type StoreLocation = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

export const DEFAULT_DATABASE_FILE = 'agentd.db';

export function defaultStore(home: string): StoreLocation {
  return { kind: 'sqlite', path: join(home, DEFAULT_DATABASE_FILE) };
}

/**
 * `sqlite` (the default file), `sqlite:PATH` (a file; relative to
 * $AGENTD_HOME), or a `postgres://` / `postgresql://` URL. Anything else is
 * refused, naming where it came from.
 */
export function parseStoreUrl(value: string, home: string, source: string, field: string): StoreLocation {
  // A postgres URL may hold a password: an error names the scheme only.
  const shown = /^postgres(ql)?:/i.test(value) ? 'a postgres URL' : JSON.stringify(value);
  const bad = (why: string): ConfigError => new ConfigError(source, field, `${why}, got ${shown}`);
  if (value === 'sqlite' || value === 'sqlite:') return defaultStore(home);
  if (value.startsWith('sqlite:')) {
    // sqlite:///abs/file.db and sqlite:file.db both name a file.
    const path = value.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (path.includes('\0')) throw bad('must be a file path');
    return { kind: 'sqlite', path: isAbsolute(path) ? path : join(home, path) };
  }
  if (/^postgres(ql)?:\/\//.test(value)) {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw bad('is not a valid URL');
    }
    if (url.hostname === '' && !url.searchParams.has('host')) throw bad('must name a host');
    return { kind: 'postgres', url: value };
  }
  throw bad('must be "sqlite", "sqlite:PATH" or a postgres:// URL');
}

/** The location as a log line may show it: never a PostgreSQL password. */
export function describeStore(store: StoreLocation): string {
  if (store.kind === 'sqlite') return `sqlite:${store.path}`;
  return withoutPassword(store.url);
}
