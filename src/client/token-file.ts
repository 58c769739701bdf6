/**
 * Finds the TCP token of a local daemon: the file the daemon keeps in its
 * home (0600, so only its user can read it). Absent file: no token.
 */
import { readFileSync } from 'node:fs';
import { tokenFile } from '../shared/home-files.ts';

export function readLocalToken(home: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(tokenFile(home), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return text.trim() || undefined;
}
