/**
 * The client's scoped token methods (PROTOCOL §4.14), admin-only on the
 * daemon, kept beside the class (client.ts adds them to AgentdClient's
 * prototype).
 */
import type * as W from '../shared/wire/ops.ts';
import type { ArgsOf, OperationName, ReplyOf } from '../shared/wire/ops.ts';

/** What these methods use of the client. */
interface Caller {
  call<Op extends OperationName>(op: Op, args: ArgsOf<Op>): Promise<ReplyOf<Op>>;
}

export interface TokenMethods {
  /** Makes a scoped token; its `token` (the secret) is shown this once. */
  createToken(args: W.CreateTokenArgs): Promise<W.CreatedToken>;
  /** Every stored token, oldest first, without secrets. */
  listTokens(): Promise<W.TokenInfo[]>;
  /** Revokes a token by id: its connections are closed. */
  revokeToken(id: string): Promise<void>;
}

export const tokenMethods: TokenMethods & ThisType<Caller> = {
  createToken(args) {
    return this.call('create_token', args);
  },
  async listTokens() {
    return (await this.call('list_tokens', {})).tokens;
  },
  async revokeToken(id) {
    await this.call('revoke_token', { id });
  },
};
