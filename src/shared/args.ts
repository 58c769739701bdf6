/**
 * Field readers for an operation's argument map. Each names the operation and
 * the field in its 400, so a client knows exactly what to fix.
 */
import { AgentdError, Code } from './errors.ts';

export type Args = Record<string, unknown>;

function bad(op: string, field: string, what: string): AgentdError {
  return new AgentdError(Code.BadRequest, `${op}.${field} ${what}`);
}

export function str(op: string, args: Args, field: string): string {
  const v = args[field];
  if (typeof v !== 'string') throw bad(op, field, v === undefined ? 'is required' : 'must be a string');
  return v;
}

export function nonEmptyStr(op: string, args: Args, field: string): string {
  const v = str(op, args, field);
  if (v.length === 0) throw bad(op, field, 'must not be empty');
  return v;
}

export function optStr(op: string, args: Args, field: string): string | undefined {
  const v = args[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw bad(op, field, 'must be a string');
  return v;
}

export function optBool(op: string, args: Args, field: string): boolean | undefined {
  const v = args[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw bad(op, field, 'must be a boolean');
  return v;
}

export function optUint(op: string, args: Args, field: string): number | undefined {
  const v = args[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw bad(op, field, 'must be a non-negative integer');
  return v;
}

export function optEnum<T extends string>(op: string, args: Args, field: string, allowed: readonly T[]): T | undefined {
  const v = args[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) {
    throw bad(op, field, `must be one of ${allowed.map((a) => `"${a}"`).join(', ')}`);
  }
  return v as T;
}

/** Fields that were removed from the protocol and are refused, not ignored (PROTOCOL §2). */
export function refuse(op: string, args: Args, fields: readonly string[], why: string): void {
  for (const f of fields) {
    if (args[f] !== undefined) throw bad(op, f, `is not accepted: ${why}`);
  }
}

export function isPlainMap(v: unknown): v is Args {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}
