/**
 * What the store holds of scoped tokens (main/auth/), and the calls main makes
 * on them (each backend answers them in its own tokens.ts). A token is kept
 * as the SHA-256 of its secret, never the secret; its id (in the token's
 * text, `agd_<id>_<secret>`) finds the row. Times are epoch milliseconds.
 */
export interface TokenRecord {
  id: string;
  /** Hex SHA-256 of the secret part. */
  hash: string;
  /** JSON list of scopes. */
  scopes: string;
  /** JSON list of agent names, or null for any agent. */
  agents: string | null;
  sender: string | null;
  label: string;
  created_at: number;
}

export type TokenCall =
  /** Stores a new token unless the table already holds `max` ('full'); answers 'ok' or 'full'. */
  | { call: 'insert'; record: TokenRecord; max: number }
  /** The row of `id`, or null. */
  | { call: 'get'; id: string }
  /** Every row, oldest first. */
  | { call: 'list' }
  /** Deletes the row of `id`; answers whether there was one. */
  | { call: 'delete'; id: string };
