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

/** How deep logged objects are scrubbed: deep enough for `{ config }` down to an MCP server's `env`. */
const SCRUB_DEPTH = 8;

/** Keys whose values are secrets at any depth (compared lower-cased), beyond the fixed paths above. */
const SECRET_KEYS = new Set(['token', 'api_key', 'apikey', 'env', 'headers', 'authorization']);

/** A copy of a logged value: secret keys censored, secret-looking text removed from its strings. */
export function scrub(value: unknown, depth = SCRUB_DEPTH): unknown {
  if (typeof value === 'string') return GENERIC_REDACTOR.all(value);
  if (depth === 0 || typeof value !== 'object' || value === null) return value;
  if (value instanceof Error) return scrubError(value);
  if (Array.isArray(value)) return value.map((v) => scrub(v, depth - 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_KEYS.has(k.toLowerCase()) ? '[redacted]' : scrub(v, depth - 1);
  return out;
}

/** The same kind of error (pino prints its class), its message and stack redacted: they may quote a provider's reply. */
function scrubError(err: Error): Error {
  const copy = Object.create(Object.getPrototypeOf(err) as object) as Error;
  for (const [k, v] of Object.entries(err)) (copy as unknown as Record<string, unknown>)[k] = typeof v === 'string' ? GENERIC_REDACTOR.all(v) : v;
  Object.defineProperty(copy, 'message', { value: GENERIC_REDACTOR.all(err.message), enumerable: false });
  Object.defineProperty(copy, 'stack', { value: GENERIC_REDACTOR.all(err.stack ?? ''), enumerable: false });
  if (err.cause instanceof Error) Object.defineProperty(copy, 'cause', { value: scrubError(err.cause), enumerable: false });
  return copy;
}

/** Told of each line written at warn or above, already scrubbed (main's: the live view's recent errors). */
export type LogSink = (level: 'warn' | 'error' | 'fatal', message: string, fields: Record<string, unknown>) => void;

const SINK_LEVELS: Record<number, 'warn' | 'error' | 'fatal'> = { 40: 'warn', 50: 'error', 60: 'fatal' };

/** A pino call's message and fields: `(msg)`, `(obj, msg)` or `(err, msg)`; an error's message joins the text. */
function lineOf(args: unknown[]): { message: string; fields: Record<string, unknown> } {
  const [first, second] = args;
  if (typeof first === 'string') return { message: first, fields: {} };
  const err = first instanceof Error ? first : (first as { err?: unknown } | null)?.err;
  const fields = first instanceof Error || typeof first !== 'object' || first === null ? {} : (first as Record<string, unknown>);
  const text = typeof second === 'string' ? second : '';
  const detail = err instanceof Error ? err.message : '';
  return { message: text !== '' && detail !== '' ? `${text}: ${detail}` : text || detail, fields };
}

export function createLogger(level: string, bindings: Record<string, unknown> = {}, sink?: LogSink): Logger {
  // A synchronous fd write works the same on main and in worker threads.
  return pino(
    {
      level,
      base: { pid: process.pid, ...bindings },
      redact: { paths: REDACT, censor: '[redacted]' },
      // Runs only for lines that are written (their level is enabled): no cost otherwise.
      hooks: {
        logMethod(args, method, lineLevel) {
          const scrubbed = args.map((a) => scrub(a, SCRUB_DEPTH));
          const named = SINK_LEVELS[lineLevel];
          if (sink !== undefined && named !== undefined) {
            const { message, fields } = lineOf(scrubbed);
            sink(named, message, fields);
          }
          return method.apply(this, scrubbed as Parameters<typeof method>);
        },
      },
    },
    pino.destination({ dest: 2, sync: true }),
  );
}
