/**
 * A scoped token's text and what `create_token` may ask for: the token is
 * `agd_<id>_<secret>`, the id (16 hex digits) finds its row, the secret (32
 * random bytes, base64url) is stored only as its SHA-256.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { AgentdError, Code } from '../../shared/errors.ts';
import { isValidAgentName } from '../../shared/config.ts';
import { BUS_SENDER_PREFIX, MAX_NAME_BYTES } from '../../shared/protocol.ts';
import type { CreateTokenArgs, TokenInfo } from '../../shared/wire/ops.ts';
import type { TokenRecord } from '../../storage/token-calls.ts';
import type { OpArgs } from '../ops/op-args.ts';
import { SCOPES, type Principal, type Scope } from './principal.ts';

const PREFIX = 'agd_';
const ID_BYTES = 8;
const SECRET_BYTES = 32;
const TOKEN_SHAPE = /^agd_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;
const MAX_LABEL = 200;
/** Agents one token may be bound to. */
export const MAX_TOKEN_AGENTS = 1000;

const bad = (what: string): AgentdError => new AgentdError(Code.BadRequest, `create_token.${what}`);

/** The parts of a presented token, or null when it is not one of ours (then it is only compared with the home's). */
export function parseToken(token: string): { id: string; secret: string } | null {
  const m = TOKEN_SHAPE.exec(token);
  return m === null ? null : { id: m[1]!, secret: m[2]! };
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** True when the secret's hash is the stored one, in time that does not depend on where they differ. */
export function secretMatches(secret: string, storedHash: string): boolean {
  const a = Buffer.from(hashSecret(secret), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

export function newTokenText(): { id: string; secret: string; token: string } {
  const id = randomBytes(ID_BYTES).toString('hex');
  const secret = randomBytes(SECRET_BYTES).toString('base64url');
  return { id, secret, token: `${PREFIX}${id}_${secret}` };
}

function stringList(v: unknown, field: string): string[] {
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw bad(`${field} must be a list of strings`);
  return [...new Set(v as string[])];
}

function scopesOf(v: unknown): Scope[] {
  if (v === undefined || v === null) throw bad(`scopes is required: a list of one or more of ${SCOPES.join(', ')}`);
  const scopes = stringList(v, 'scopes');
  if (scopes.length === 0) throw bad(`scopes must name at least one of ${SCOPES.join(', ')}`);
  for (const s of scopes) if (!(SCOPES as readonly string[]).includes(s)) throw bad(`scopes: unknown scope "${s.slice(0, 64)}"; the scopes are ${SCOPES.join(', ')}`);
  return scopes as Scope[];
}

function agentsOf(v: unknown): string[] | null {
  if (v === undefined || v === null) return null;
  const agents = stringList(v, 'agents');
  if (agents.length === 0) throw bad('agents must name at least one agent when given (leave it out for any agent)');
  if (agents.length > MAX_TOKEN_AGENTS) throw bad(`agents may name at most ${MAX_TOKEN_AGENTS} agents`);
  for (const a of agents) if (!isValidAgentName(a)) throw bad(`agents: "${a.slice(0, 64)}" is not an agent name`);
  return agents;
}

function senderOf(v: unknown): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || v === '') throw bad('sender must be a non-empty string');
  if (Buffer.byteLength(v) > MAX_NAME_BYTES || v.includes('\uFFFD')) throw bad(`sender must be at most ${MAX_NAME_BYTES} bytes of valid UTF-8`);
  if (v.startsWith(BUS_SENDER_PREFIX)) throw bad(`sender must not start with "${BUS_SENDER_PREFIX}": those conversations belong to the event bus`);
  return v;
}

/** The token `create_token` asks for, checked (400 naming the field otherwise); the secret is made by the caller. */
export function tokenRequest(args: OpArgs<'create_token'>): Required<Omit<CreateTokenArgs, 'agents' | 'sender'>> & { agents: string[] | null; sender: string | null } {
  const scopes = scopesOf(args.raw('scopes'));
  const agents = agentsOf(args.raw('agents'));
  const sender = senderOf(args.raw('sender'));
  const label = args.optStr('label') ?? '';
  if (label.length > MAX_LABEL) throw bad(`label must be at most ${MAX_LABEL} characters`);
  if ((agents !== null || sender !== null) && scopes.some((s) => s !== 'chat' && s !== 'read')) {
    throw bad('agents and sender bind chat and read tokens only: a token with the admin or agents:write scope can do more than any binding could hold');
  }
  return { scopes, agents, sender, label };
}

export function tokenInfo(r: TokenRecord): TokenInfo {
  return {
    id: r.id,
    scopes: JSON.parse(r.scopes) as Scope[],
    agents: r.agents === null ? null : (JSON.parse(r.agents) as string[]),
    sender: r.sender,
    label: r.label,
    created_at: new Date(r.created_at).toISOString(),
  };
}

export function principalOf(r: TokenRecord): Principal {
  const info = tokenInfo(r);
  return Object.freeze({ scopes: Object.freeze(info.scopes), agents: info.agents === null ? null : Object.freeze(info.agents), sender: info.sender, tokenId: r.id });
}
