/**
 * The TCP token. A token from the config or AGENTD_TOKEN wins; otherwise,
 * unless TCP was explicitly made insecure, the daemon keeps one in
 * $AGENTD_HOME/token (32 random bytes as hex, 0600), created on the first
 * start and reused after, so that TCP is authenticated by default and a
 * local client can find the token without being told.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import type { ResolvedConfig } from '../../shared/config.ts';
import { tokenFile } from '../../shared/home-files.ts';
import type { Logger } from '../../shared/log.ts';
import { PRIVATE_FILE_MODE, tighten } from '../private-files.ts';

const TOKEN_BYTES = 32;

/** The token TCP connections must present, or null when TCP runs without one. */
export function resolveTcpToken(config: ResolvedConfig, log: Logger): string | null {
  if (config.token !== null) return config.token;
  if (config.tcpInsecure) {
    if (config.tcp !== null) log.warn('TCP runs without a token (--tcp-insecure): every local user can use this daemon');
    return null;
  }
  return readOrCreateToken(config.home, log);
}

/** Reads $home/token (tightening a wider file), creating it when absent. */
export function readOrCreateToken(home: string, log: Logger): string {
  const path = tokenFile(home);
  try {
    const fd = openSync(path, 'wx', PRIVATE_FILE_MODE); // 'wx': never follow or reuse someone's file
    try {
      writeSync(fd, `${randomBytes(TOKEN_BYTES).toString('hex')}\n`);
    } finally {
      closeSync(fd);
    }
    log.info({ path }, 'created the TCP token file');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    tighten(path, PRIVATE_FILE_MODE, log);
  }
  const token = readFileSync(path, 'utf8').trim();
  if (token === '') throw new Error(`${path} is empty; delete it and agentd makes a new token`);
  return token;
}

/** Compares a presented token with the configured one in time that does not depend on where they differ. */
export function sameSecret(presented: string, expected: string): boolean {
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}
