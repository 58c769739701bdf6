/** JSON Merge Patch (RFC 7386): maps merge, `null` removes a key, anything else replaces. */
import { isPlainMap } from './args.ts';

export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainMap(patch)) return patch;
  const out: Record<string, unknown> = isPlainMap(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}
