/** Outbound webhooks: agent events to the outside world (PROTOCOL §4.12). */
import { AgentdError, Code } from '../../shared/errors.ts';
import { checkName } from '../schedules/schedule-spec.ts';
import { webhookFromArgs } from '../webhooks/webhook-spec.ts';
import { op, type OpTable } from './op-table.ts';

type WebhookOp = 'create_webhook' | 'list_webhooks' | 'delete_webhook' | 'webhook_deliveries';

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1_000;

export const webhookOps: OpTable<WebhookOp> = {
  create_webhook: op(async (ctx, _from, _req, args) => await ctx.webhooks.create(webhookFromArgs(args, ctx.webhookHosts, Date.now()))),
  list_webhooks: op(async (ctx) => ({ webhooks: await ctx.webhooks.list() })),
  delete_webhook: op(async (ctx, _from, _req, args) => {
    const name = checkName('delete_webhook', args.nonEmptyStr('name'));
    if (!(await ctx.webhooks.delete(name))) throw new AgentdError(Code.NotFound, `no webhook "${name}"`);
    return {};
  }),
  webhook_deliveries: op(async (ctx, _from, _req, args) => {
    const name = checkName('webhook_deliveries', args.nonEmptyStr('name'));
    const status = args.optEnum('status', ['pending', 'delivered', 'failed']) ?? null;
    const limit = args.optUint('limit') ?? DEFAULT_LIMIT;
    if (limit < 1 || limit > MAX_LIMIT) throw new AgentdError(Code.BadRequest, `webhook_deliveries.limit must be from 1 to ${MAX_LIMIT}, got ${limit}`);
    return { deliveries: await ctx.webhooks.deliveries(name, status, limit) };
  }),
};
