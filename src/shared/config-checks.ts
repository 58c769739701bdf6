/**
 * The checks every configuration field goes through (config.ts, the cluster
 * settings, store-location.ts): each throws a ConfigError that names the
 * source, the field and what is wrong.
 */
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

export function stringMap(v: unknown, source: string, field: string): Record<string, string> {
  if (!isPlainMap(v) || !Object.values(v).every((x) => typeof x === 'string')) throw new ConfigError(source, field, 'must be a map of strings');
  return { ...(v as Record<string, string>) };
}

export function bool(v: unknown, source: string, field: string): boolean {
  if (typeof v !== 'boolean') throw new ConfigError(source, field, `must be true or false, got ${JSON.stringify(v)}`);
  return v;
}
