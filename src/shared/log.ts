/**
 * One structured logger per thread, writing JSON lines to stderr. Quiet by
 * default (warn). Secrets are redacted by key wherever they appear, so a
 * careless `log.info({ config })` cannot leak an API key, a token, an MCP
 * `env` or `headers`, or an Authorization header; and every string logged
 * (messages, error messages and stacks) has `Bearer` tokens and
 * Authorization values removed (redact.ts), for text that came from outside.
 */
import { pino, type Logger } from 'pino';
import { GENERIC_REDACTOR } from './redact.ts';

export type { Logger };

const REDACT = [
  'token', '*.token', 'api_key', '*.api_key', 'apiKey', '*.apiKey',
  'env', '*.env', '*.*.env', 'authorization', 'Authorization', '*.authorization', '*.Authorization',
  'headers', '*.headers', '*.*.headers',
];

/** How deep logged objects are scrubbed: log calls pass flat bindings, an error, or a config. */
const SCRUB_DEPTH = 4;

/** A copy of a logged value with secret-looking text removed from its strings. */
function scrub(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return GENERIC_REDACTOR.all(value);
  if (depth === 0 || typeof value !== 'object' || value === null) return value;
  if (value instanceof Error) {
    // Kept as an error shape pino prints; its message and stack may quote a provider's reply.
    return { type: value.name, message: GENERIC_REDACTOR.all(value.message), stack: GENERIC_REDACTOR.all(value.stack ?? '') };
  }
  if (Array.isArray(value)) return value.map((v) => scrub(v, depth - 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = scrub(v, depth - 1);
  return out;
}

export function createLogger(level: string, bindings: Record<string, unknown> = {}): Logger {
  // A synchronous fd write works the same on main and in worker threads.
  return pino(
    {
      level,
      base: { pid: process.pid, ...bindings },
      redact: { paths: REDACT, censor: '[redacted]' },
      // Runs only for lines that are written (their level is enabled): no cost otherwise.
      hooks: {
        logMethod(args, method) {
          return method.apply(this, args.map((a) => scrub(a, SCRUB_DEPTH)) as Parameters<typeof method>);
        },
      },
    },
    pino.destination({ dest: 2, sync: true }),
  );
}
