/**
 * The checks every configuration field goes through (config.ts, the cluster
 * settings, store-location.ts): each throws a ConfigError that names the
 * source, the field and what is wrong. The zod schemas below say it in the
 * same words as the hand-written checks, which remain where a rule spans
 * fields or the order of checks shapes the message.
 */
import { z } from 'zod';
import { isPlainMap } from './args.ts';
import { AgentdError, Code } from './errors.ts';

/** A configuration that does not validate: 400 when it came in a request (`create_agent`, `update_agent`). */
export class ConfigError extends AgentdError {
  constructor(source: string, field: string, what: string) {
    super(Code.BadRequest, `${source}: ${field} ${what}`);
    this.name = 'ConfigError';
  }
}

export function positiveInt(v: unknown, source: string, field: string, min = 1): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) {
    throw new ConfigError(source, field, `must be an integer >= ${min}, got ${JSON.stringify(v)}`);
  }
  return v;
}

export function boundedInt(v: unknown, source: string, field: string, min: number, max: number): number {
  if (typeof v === 'number' && Number.isInteger(v) && v > max) {
    throw new ConfigError(source, field, `must be an integer >= ${min} and <= ${max}, got ${JSON.stringify(v)}`);
  }
  return positiveInt(v, source, field, min);
}

export function string(v: unknown, source: string, field: string, allowEmpty = true): string {
  if (typeof v !== 'string' || (!allowEmpty && v === '')) {
    throw new ConfigError(source, field, `must be a ${allowEmpty ? '' : 'non-empty '}string, got ${JSON.stringify(v)}`);
  }
  return v;
}

export function onlyKeys(map: Record<string, unknown>, allowed: string[], source: string, path: string): void {
  for (const key of Object.keys(map)) {
    if (!allowed.includes(key)) {
      throw new ConfigError(source, path ? `${path}.${key}` : key, `is not a known option (known: ${allowed.join(', ')})`);
    }
  }
}

export function stringList(v: unknown, source: string, field: string): string[] {
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new ConfigError(source, field, 'must be a list of strings');
  return [...v] as string[];
}

const got = (iss: { input?: unknown }): string => `got ${JSON.stringify(iss.input)}`;

/** zod: an integer >= `min` (a safe integer: zod's int refuses anything beyond). */
export function atLeast(min: number): z.ZodInt {
  const error = (iss: { input?: unknown }): string => `must be an integer >= ${min}, ${got(iss)}`;
  return z.int({ error }).min(min, { error });
}

/** zod: an integer >= `min` and <= `max`, said as boundedInt says it. */
export function between(min: number, max: number): z.ZodInt {
  const low = (iss: { input?: unknown }): string => `must be an integer >= ${min}, ${got(iss)}`;
  const high = (iss: { input?: unknown }): string => `must be an integer >= ${min} and <= ${max}, ${got(iss)}`;
  // An integer past zod's safe range is too big too: say the bound, as for any other.
  return z.int({ error: (iss) => (iss.code === 'too_big' ? high(iss) : low(iss)) }).min(min, { error: low }).max(max, { error: high });
}

/** zod: a list of strings. */
export function strings(): z.ZodType<string[]> {
  const list = (v: unknown): boolean => Array.isArray(v) && v.every((x) => typeof x === 'string');
  return z.custom<string[]>(list, { error: 'must be a list of strings' }).transform((v) => [...v]);
}

/** zod: a map of strings (headers, environment). */
export function stringTable(): z.ZodType<Record<string, string>> {
  const table = (v: unknown): boolean => isPlainMap(v) && Object.values(v).every((x) => typeof x === 'string');
  return z.custom<Record<string, string>>(table, { error: 'must be a map of strings' }).transform((v) => ({ ...v }));
}

/** zod: an http:// or https:// URL. */
export function httpUrl(): z.ZodString {
  return text(false).regex(/^https?:\/\//, { error: 'must be an http:// or https:// URL' });
}

/** zod: a string, or a non-empty one. */
export function text(allowEmpty = true): z.ZodString {
  const error = (iss: { input?: unknown }): string => `must be a ${allowEmpty ? '' : 'non-empty '}string, ${got(iss)}`;
  return allowEmpty ? z.string({ error }) : z.string({ error }).min(1, { error });
}

/** zod: true or false. */
export function flag(): z.ZodBoolean {
  return z.boolean({ error: (iss) => `must be true or false, ${got(iss)}` });
}

/**
 * Parses `raw` (a plain object) with a strict object schema; the first
 * problem becomes a ConfigError naming its field (an unknown key first, as
 * onlyKeys reports it).
 */
export function parseFields<S extends z.ZodObject>(schema: S, raw: Record<string, unknown>, source: string, path: string): z.output<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues;
  const unknown = issues.find((i) => i.code === 'unrecognized_keys');
  if (unknown !== undefined) onlyKeys(raw, Object.keys(schema.shape), source, path);
  const first = issues[0]!;
  const field = [path, ...first.path.map(String)].filter((p) => p !== '').join('.');
  throw new ConfigError(source, field, first.message);
}
