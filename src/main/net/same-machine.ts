/**
 * Whether an HTTP request comes from this machine's own pages and tools:
 * where a listener serves loopback without a token, a web page the user
 * visits must not drive or read it (cross-site requests, DNS rebinding).
 */
import type { IncomingMessage } from 'node:http';

const LOOPBACK_NAMES = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** The host of a `Host` header or an `Origin` URL, lowercased, without its port; null when it cannot be read. */
function hostnameOf(value: string, isOrigin: boolean): string | null {
  try {
    return new URL(isOrigin ? value : `http://${value}`).hostname.toLowerCase();
  } catch {
    return null;
  }
}

/**
 * Whether a request is addressed to this machine and comes from no other
 * site: its `Host` a loopback name and its `Origin`, when a browser sent one,
 * too. Without a token every request is the admin, so a web page the user
 * visits (cross-site, or by DNS rebinding) must not be able to drive it.
 */
export function fromThisMachine(req: IncomingMessage): boolean {
  const host = req.headers.host;
  if (host === undefined || !LOOPBACK_NAMES.has(hostnameOf(host, false) ?? '')) return false;
  const origin = req.headers.origin;
  return origin === undefined || LOOPBACK_NAMES.has(hostnameOf(origin, true) ?? '');
}
