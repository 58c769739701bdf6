/**
 * Whether an HTTP request comes from this machine's own pages and tools:
 * where a listener serves loopback without a token, a web page the user
 * visits must not drive or read it (cross-site requests, DNS rebinding).
 */
import type { IncomingMessage } from 'node:http';
import { isLoopback } from '../../shared/config.ts';

/** Whether a `Host` header or an `Origin` URL names a loopback address (the listeners' own rule, `isLoopback`). */
function namesLoopback(value: string, isOrigin: boolean): boolean {
  let hostname: string;
  try {
    hostname = new URL(isOrigin ? value : `http://${value}`).hostname.toLowerCase();
  } catch {
    return false;
  }
  return isLoopback(hostname.replace(/^\[(.*)\]$/, '$1'));
}

/**
 * Whether a request is addressed to this machine and comes from no other
 * site: its `Host` a loopback name and its `Origin`, when a browser sent one,
 * too. Without a token every request is the admin, so a web page the user
 * visits (cross-site, or by DNS rebinding) must not be able to drive it.
 */
export function fromThisMachine(req: IncomingMessage): boolean {
  const host = req.headers.host;
  if (host === undefined || !namesLoopback(host, false)) return false;
  const origin = req.headers.origin;
  return origin === undefined || namesLoopback(origin, true);
}
