/**
 * Headless Chromium for the dashboard test: Debian's `chromium` found on
 * PATH (puppeteer-core downloads no browser). Missing, the test fails under
 * CI and is skipped elsewhere, printing why (service-gate.ts).
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { skipReason } from './service-gate.ts';

/** The first executable of one of `names` on PATH, or null. */
export function findOnPath(...names: string[]): string | null {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    for (const name of names) {
      const file = join(dir, name);
      try {
        accessSync(file, constants.X_OK);
        return file;
      } catch {
        // not here
      }
    }
  }
  return null;
}

export const CHROMIUM = findOnPath('chromium', 'chromium-browser');

/** Null when Chromium is here; else (not under CI) the printed reason to skip. Throws under CI. */
export const chromiumSkip = skipReason(CHROMIUM === null ? 'chromium is not on PATH: install it (apt-get install -y chromium; .ci/run does when it is missing) to run the dashboard test' : null);
