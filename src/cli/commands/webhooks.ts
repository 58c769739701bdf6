/** Outbound webhooks: list, add, rm, deliveries (PROTOCOL §4.12). */
import type { WebhookDeliveryStatus } from '../../client/index.ts';
import { type Command, type Context, type Flags, parseUint, UsageError } from '../command.ts';

const list = (value: string | undefined): string[] | undefined => value?.split(',').map((v) => v.trim()).filter((v) => v !== '');

/** The secret from the variable --secret-env names: never from the command line, where other users could see it. */
function secretOf(flags: Flags, env: NodeJS.ProcessEnv): string {
  const name = flags['secret-env'];
  if (name === undefined) throw new UsageError('webhooks add needs --secret-env VAR: the environment variable holding the signing secret');
  const secret = env[name];
  if (secret === undefined || secret === '') throw new UsageError(`--secret-env ${name}: the variable is not set`);
  return secret;
}

const listHooks: Command = {
  name: 'webhooks list',
  usage: '',
  summary: 'list the webhooks (never their secrets) (also: `agentctl webhooks`)',
  example: 'agentctl webhooks',
  arity: [0, 0],
  async run({ client, json, out }: Context) {
    const webhooks = await client.webhooks();
    if (json) return out.json({ webhooks });
    if (webhooks.length === 0) return out.line('no webhooks');
    out.table([['NAME', 'URL', 'EVENTS', 'AGENTS', 'DROPPED'], ...webhooks.map((w) => [w.name, w.url, w.events.join(','), w.agents?.join(',') ?? '(all)', String(w.dropped)])]);
  },
};

const add: Command = {
  name: 'webhooks add',
  usage: 'NAME URL',
  summary: 'post agent events of some kinds to URL, signed with a secret',
  details: 'Each delivery carries X-Agentd-Delivery (its id) and X-Agentd-Signature (t=..,v1=HMAC-SHA256 of "t.body"); see docs/PROTOCOL.md §4.12.',
  example: 'WEBHOOK_SECRET=... agentctl webhooks add ops https://hooks.example.com/agentd --events turn_end --secret-env WEBHOOK_SECRET',
  options: ['events', 'agents', 'secret-env', 'max-attempts'],
  arity: [2, 2],
  async run({ client, args, flags, json, out }: Context) {
    const events = list(flags.events);
    if (events === undefined || events.length === 0) throw new UsageError('webhooks add needs --events K,K (turn_end, approval_required, ...)');
    const agents = list(flags.agents);
    const maxAttempts = flags['max-attempts'] === undefined ? undefined : parseUint(flags['max-attempts'], '--max-attempts');
    const w = await client.createWebhook({ name: args[0]!, url: args[1]!, events, secret: secretOf(flags, process.env), ...(agents === undefined ? {} : { agents }), ...(maxAttempts === undefined ? {} : { max_attempts: maxAttempts }) });
    if (json) out.json(w);
    else out.line(`webhook ${w.name}: ${w.events.join(',')} -> ${w.url}`);
  },
};

const rm: Command = {
  name: 'webhooks rm',
  usage: 'NAME',
  summary: 'delete a webhook and its deliveries, pending ones included',
  example: 'agentctl webhooks rm ops',
  arity: [1, 1],
  async run({ client, args, json, out }: Context) {
    await client.deleteWebhook(args[0]!);
    if (json) out.json({});
    else out.line(`removed webhook ${args[0]!}`);
  },
};

const STATUSES: readonly string[] = ['pending', 'delivered', 'failed'];

const deliveries: Command = {
  name: 'webhooks deliveries',
  usage: 'NAME',
  summary: 'a webhook\'s deliveries, newest first: status, attempts and why the last one failed',
  example: 'agentctl webhooks deliveries ops --status failed',
  options: ['status'],
  arity: [1, 1],
  async run({ client, args, flags, json, out }: Context) {
    if (flags.status !== undefined && !STATUSES.includes(flags.status)) throw new UsageError(`--status is pending, delivered or failed, got "${flags.status}"`);
    const status = flags.status as WebhookDeliveryStatus | undefined;
    const found = await client.webhookDeliveries(args[0]!, status === undefined ? {} : { status });
    if (json) return out.json({ deliveries: found });
    if (found.length === 0) return out.line('no deliveries');
    out.table([['ID', 'KIND', 'CONVERSATION', 'STATUS', 'ATTEMPTS', 'LAST ERROR'], ...found.map((d) => [d.id, d.kind, `${d.agent}/${d.sender}`, d.status, String(d.attempts), d.last_error])]);
  },
};

export const webhookCommands: Command[] = [listHooks, add, rm, deliveries];
