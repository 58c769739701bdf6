/** Scoped tokens (PROTOCOL §4.14): made, listed and revoked by the admin (auth/scope-table.ts). */
import { AgentdError, Code } from '../../shared/errors.ts';
import { tokenRequest } from '../auth/token-spec.ts';
import { op, type OpTable } from './op-table.ts';

type TokenOp = 'create_token' | 'list_tokens' | 'revoke_token';

export const tokenOps: OpTable<TokenOp> = {
  create_token: op(async (ctx, _from, _req, args) => await ctx.tokens.create(tokenRequest(args))),
  list_tokens: op(async (ctx) => ({ tokens: await ctx.tokens.list() })),
  revoke_token: op(async (ctx, _from, _req, args) => {
    const id = args.nonEmptyStr('id');
    if (!(await ctx.tokens.revoke(id))) throw new AgentdError(Code.NotFound, `no token "${id.slice(0, 100)}"`);
    return {};
  }),
};
