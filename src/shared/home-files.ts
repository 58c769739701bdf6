/**
 * Names of the files in $AGENTD_HOME that both the daemon and a local client
 * need to agree on (the client reads the TCP token from here).
 */
import { join } from 'node:path';

/** The TCP token the daemon creates when none is configured (0600, hex). */
export function tokenFile(home: string): string {
  return join(home, 'token');
}
