/** The wire contract of scoped tokens (PROTOCOL §4.14): admin-only operations that make, list and revoke them. */
import type { Empty } from './common.ts';

/** What a token may do (src/main/auth/principal.ts). */
export type TokenScope = 'admin' | 'agents:write' | 'chat' | 'read';

export interface CreateTokenArgs {
  scopes: TokenScope[];
  /** The agents it may address; absent or null: any. */
  agents?: string[] | null;
  /** The one sender it speaks as; absent or null: any. */
  sender?: string | null;
  label?: string;
}

/** A stored token, as `list_tokens` shows it: never its secret. */
export interface TokenInfo {
  id: string;
  scopes: TokenScope[];
  agents: string[] | null;
  sender: string | null;
  label: string;
  /** RFC 3339. */
  created_at: string;
}

/** `create_token`'s answer: the token itself (`agd_<id>_<secret>`), shown this once. */
export interface CreatedToken extends TokenInfo {
  token: string;
}

export interface TokenOperations {
  create_token: { args: CreateTokenArgs; variant: 'token'; reply: CreatedToken };
  list_tokens: { args: Empty; variant: 'token_list'; reply: { tokens: TokenInfo[] } };
  revoke_token: { args: { id: string }; variant: 'pong'; reply: Empty };
}
