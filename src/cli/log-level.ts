/**
 * Checks agentd's --log-level and AGENTD_LOG_LEVEL against the levels the
 * configuration file's log_level accepts, so a typo gets a clear message
 * instead of a raw pino error.
 */
import { LOG_LEVELS } from '../shared/config.ts';

/** The problem with the effective log level from the flag or the environment, or null if it is fine. */
export function logLevelProblem(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string | null {
  const [source, level] = flag !== undefined ? ['--log-level', flag] : ['AGENTD_LOG_LEVEL', env.AGENTD_LOG_LEVEL];
  if (level === undefined || LOG_LEVELS.includes(level)) return null;
  return `${source} must be one of ${LOG_LEVELS.join(', ')}, got "${level}"`;
}
