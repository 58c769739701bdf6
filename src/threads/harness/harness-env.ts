/**
 * The environment a harness thread starts with. Harness code must not find
 * provider API keys or the daemon's token in its `process.env`, so it gets an
 * allow-list, never the shard's environment minus a deny-list.
 */
import type { ProviderConfig } from '../../shared/config.ts';

/** The only variables a harness thread sees (each only if set in the daemon's environment). */
export const HARNESS_ENV_KEYS = ['PATH', 'HOME', 'USER', 'LOGNAME', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TZ', 'TMPDIR'] as const;

/** The allow-listed variables of `env`, minus any a provider names as its key (however unlikely). */
export function harnessEnv(env: NodeJS.ProcessEnv, providers: Record<string, ProviderConfig>): Record<string, string> {
  const keyVars = new Set(Object.values(providers).map((p) => p.api_key_env));
  const out: Record<string, string> = {};
  for (const name of HARNESS_ENV_KEYS) {
    const value = env[name];
    if (value !== undefined && !keyVars.has(name)) out[name] = value;
  }
  return out;
}
