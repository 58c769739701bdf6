/**
 * One structured logger per thread, writing JSON lines to stderr. Quiet by
 * default (warn). Secrets are redacted by key wherever they appear, so a
 * careless `log.info({ config })` cannot leak an API key, a token, an MCP
 * `env` or an Authorization header.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

const REDACT = [
  'token', '*.token', 'api_key', '*.api_key', 'apiKey', '*.apiKey',
  'env', '*.env', '*.*.env', 'authorization', 'Authorization', '*.authorization', '*.Authorization',
  'headers.authorization', 'headers.Authorization', '*.headers.authorization', '*.headers.Authorization',
];

export function createLogger(level: string, bindings: Record<string, unknown> = {}): Logger {
  // A synchronous fd write works the same on main and in worker threads.
  return pino(
    { level, base: { pid: process.pid, ...bindings }, redact: { paths: REDACT, censor: '[redacted]' } },
    pino.destination({ dest: 2, sync: true }),
  );
}
