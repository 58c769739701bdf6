/**
 * Who a request comes from, as far as what it may do: the home's token is the
 * admin; scoped tokens (stored hashed in the store) can do less. Every
 * transport (socket, HTTP) resolves a presented token to a Principal once,
 * at authentication, and dispatch checks each operation against it.
 */

/** `admin`: everything; `agents:write`: operations that can make the daemon run a program; `chat`: turns, runs, history, search, publish; `read`: history, stats, lists. */
export type Scope = 'admin' | 'agents:write' | 'chat' | 'read';

export const SCOPES: readonly Scope[] = ['admin', 'agents:write', 'chat', 'read'];

export interface Principal {
  readonly scopes: readonly Scope[];
  /** The agents this token may address; null: any. */
  readonly agents: readonly string[] | null;
  /** The one sender this token speaks as; null: any. */
  readonly sender: string | null;
  /** The stored token's id; null for the home's admin token (or no token configured). */
  readonly tokenId: string | null;
}

/** The home's token, or a daemon without a token on a trusted transport (unix socket, loopback). */
export const ADMIN: Principal = Object.freeze({ scopes: Object.freeze(['admin'] as Scope[]), agents: null, sender: null, tokenId: null });

/** Resolves a presented token to what it may do, or null when it is unknown or revoked. */
export type Authenticate = (token: string) => Promise<Principal | null>;

/**
 * Whether a requester (its principal; none: the admin) sees agents' whole
 * configuration, MCP `env` and `headers` values included: the admin, and
 * `agents:write` (which could set them anyway). Others (`read`) get agents
 * with an empty `config`, as a harness does, and MCP servers with those
 * values redacted.
 */
export function seesSecrets(p: Principal | undefined): boolean {
  return p === undefined || p.scopes.includes('admin') || p.scopes.includes('agents:write');
}
