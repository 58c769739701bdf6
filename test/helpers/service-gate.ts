/**
 * What a test that needs a service (PostgreSQL, NATS) does when the service
 * is missing. Under CI it fails: a CI run whose services did not start must
 * not come out green by skipping every test that needed them. Elsewhere it
 * skips, printing why and how to run it, so a laptop without the services
 * can still run the rest.
 */

/** True when CI is set to anything but empty, `false` or `0` (the convention CI services follow: `CI=true`). */
export function inCi(env: NodeJS.ProcessEnv = process.env): boolean {
  const value = (env.CI ?? '').trim().toLowerCase();
  return value !== '' && value !== 'false' && value !== '0';
}

export type ServiceDecision =
  | { action: 'run' }
  | { action: 'skip'; reason: string }
  | { action: 'fail'; reason: string };

/** `missing`: null when the service answered, else why not and how to provide it. */
export function decide(missing: string | null, env: NodeJS.ProcessEnv = process.env): ServiceDecision {
  if (missing === null) return { action: 'run' };
  return inCi(env)
    ? { action: 'fail', reason: `CI is set, so this fails instead of skipping: ${missing}` }
    : { action: 'skip', reason: `skipped: ${missing}` };
}

/** Thrown at a test file's top level, it fails the file (every test in it) with the reason. */
export class ServiceMissingError extends Error {
  override name = 'ServiceMissingError';
}

/**
 * Null when the service answered (run the tests). Otherwise, under CI, throws
 * ServiceMissingError; elsewhere prints the reason and returns it, for
 * `describe.skipIf(reason !== null)`.
 */
export function skipReason(missing: string | null, env: NodeJS.ProcessEnv = process.env): string | null {
  const decision = decide(missing, env);
  switch (decision.action) {
    case 'run':
      return null;
    case 'fail':
      throw new ServiceMissingError(decision.reason);
    case 'skip':
      console.warn(decision.reason);
      return decision.reason;
  }
}
