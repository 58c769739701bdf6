/**
 * Scoped tokens: made, listed and revoked by an admin (ops/tokens.ts), kept
 * hashed in the store (so every cluster node sees them), and resolved to a
 * Principal when a client presents one (`authenticate`, what every transport
 * is given).
 *
 * Revocation: on the node that revokes, at once: the token leaves the cache
 * and the connections holding it are cut (`onRevoked`). Another node learns
 * of it within SWEEP_MS: a cached lookup lives that long at most, and every
 * SWEEP_MS a node holding connections of scoped tokens checks their ids
 * against the store and cuts those whose token is gone.
 */
import { AgentdError, Code } from '../../shared/errors.ts';
import type { Logger } from '../../shared/log.ts';
import type { CreatedToken, TokenInfo } from '../../shared/wire/ops.ts';
import type { TokenCall, TokenRecord } from '../../storage/token-calls.ts';
import type { StoragePool } from '../hosts/storage-pool.ts';
import { sameSecret } from '../net/token.ts';
import { ADMIN, type Authenticate, type Principal } from './principal.ts';
import { hashSecret, newTokenText, parseToken, principalOf, secretMatches, tokenInfo, type tokenRequest } from './token-spec.ts';

/** How long a token looked up stays cached, and how often live connections' tokens are checked again: other nodes' revocations hold within this. */
export const SWEEP_MS = 5_000;
/** Stored tokens at most. */
export const MAX_TOKENS = 10_000;
/** Cached lookups at most (the cache is emptied when full). */
const MAX_CACHED = 10_000;

interface Cached {
  record: TokenRecord;
  principal: Principal;
  until: number;
}

export interface TokenServiceOptions {
  storage: StoragePool | null;
  log: Logger;
  /** This node's live connections: those holding a revoked token are ended. */
  live(): Iterable<{ readonly principal?: Principal; end(): void }>;
}

export class TokenService {
  readonly #opts: TokenServiceOptions;
  readonly #cache = new Map<string, Cached>();
  #sweep: NodeJS.Timeout | null = null;

  constructor(opts: TokenServiceOptions) {
    this.#opts = opts;
  }

  #call<T>(c: TokenCall): Promise<T> {
    const storage = this.#opts.storage;
    if (storage === null) throw new AgentdError(Code.BadRequest, 'scoped tokens are kept in the store, and this daemon runs without one (persist: false): only the home token works');
    return storage.run<T>({ op: 'tokens', call: c });
  }

  async create(req: ReturnType<typeof tokenRequest>): Promise<CreatedToken> {
    const { id, secret, token } = newTokenText();
    const record: TokenRecord = {
      id, hash: hashSecret(secret), scopes: JSON.stringify(req.scopes), agents: req.agents === null ? null : JSON.stringify(req.agents),
      sender: req.sender, label: req.label, created_at: Date.now(),
    };
    const result = await this.#call<'ok' | 'full'>({ call: 'insert', record, max: MAX_TOKENS });
    if (result === 'full') throw new AgentdError(Code.TooMany, `the store holds ${MAX_TOKENS} tokens already; revoke some first`);
    this.#opts.log.info({ token_id: id, scopes: req.scopes, agents: req.agents, sender: req.sender }, 'token created');
    return { ...tokenInfo(record), token };
  }

  async list(): Promise<TokenInfo[]> {
    return (await this.#call<TokenRecord[]>({ call: 'list' })).map(tokenInfo);
  }

  /** Deletes the token; what this node serves under it is cut now. False when there was none. */
  async revoke(id: string): Promise<boolean> {
    this.#cache.delete(id);
    const gone = await this.#call<boolean>({ call: 'delete', id });
    this.#cache.delete(id); // a lookup that raced the delete
    this.#cut(id);
    if (gone) this.#opts.log.info({ token_id: id }, 'token revoked');
    return gone;
  }

  /** A presented scoped token's Principal, or null (not a scoped token, unknown, revoked, or a wrong secret). */
  readonly authenticate: Authenticate = async (token) => {
    const parts = parseToken(token);
    if (parts === null || this.#opts.storage === null) return null;
    const now = Date.now();
    let hit = this.#cache.get(parts.id);
    if (hit === undefined || hit.until <= now) {
      this.#cache.delete(parts.id);
      const record = await this.#call<TokenRecord | null>({ call: 'get', id: parts.id });
      if (record === null) return null;
      if (this.#cache.size >= MAX_CACHED) this.#cache.clear();
      hit = { record, principal: principalOf(record), until: now + SWEEP_MS };
      this.#cache.set(parts.id, hit);
    }
    return secretMatches(parts.secret, hit.record.hash) ? hit.principal : null;
  };

  /** Checks live connections' tokens against the store every SWEEP_MS (revocations made on other nodes). */
  startSweeping(): void {
    if (this.#opts.storage === null || this.#sweep !== null) return;
    this.#sweep = setInterval(() => {
      const live = new Set<string>();
      for (const c of this.#opts.live()) if (c.principal?.tokenId) live.add(c.principal.tokenId);
      if (live.size === 0) return;
      this.#call<TokenRecord[]>({ call: 'list' }).then(
        (rows) => {
          const kept = new Set(rows.map((r) => r.id));
          for (const id of live) if (!kept.has(id)) (this.#cache.delete(id), this.#cut(id));
        },
        (err: unknown) => this.#opts.log.warn({ err }, 'checking live tokens against the store failed'),
      );
    }, SWEEP_MS).unref();
  }

  /** Ends this node's connections that hold token `id`. */
  #cut(id: string): void {
    for (const c of [...this.#opts.live()]) if (c.principal?.tokenId === id) c.end();
  }

  stop(): void {
    if (this.#sweep !== null) clearInterval(this.#sweep);
    this.#sweep = null;
  }
}

/**
 * What a transport authenticates with: the home's token (null: none
 * configured) is the admin, any other is looked up as a scoped token.
 */
export function authenticator(homeToken: string | null, tokens: TokenService): Authenticate {
  return async (token) => (homeToken !== null && sameSecret(token, homeToken) ? ADMIN : await tokens.authenticate(token));
}
