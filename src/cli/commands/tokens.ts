/** Scoped tokens: list, create, revoke (PROTOCOL §4.14; admin only). */
import type { TokenInfo, TokenScope } from '../../client/index.ts';
import { type Command, type Context, UsageError } from '../command.ts';

const bindings = (t: TokenInfo): string => `${t.agents?.join(',') ?? '(any)'} / ${t.sender ?? '(any)'}`;

const list: Command = {
  name: 'tokens list',
  usage: '',
  summary: 'list the scoped tokens, never their secrets (also: `agentctl tokens`)',
  example: 'agentctl tokens',
  arity: [0, 0],
  async run({ client, json, out }: Context) {
    const tokens = await client.listTokens();
    if (json) return out.json({ tokens });
    if (tokens.length === 0) return out.line('no tokens');
    out.table([['ID', 'SCOPES', 'AGENTS / SENDER', 'LABEL', 'CREATED'], ...tokens.map((t) => [t.id, t.scopes.join(','), bindings(t), t.label || '-', t.created_at])]);
  },
};

const create: Command = {
  name: 'tokens create',
  usage: '',
  summary: 'make a token that can do less than the home\'s: its secret is printed this once',
  details: 'Scopes: admin (everything), agents:write (agents, MCP servers, models, subscriptions, schedules, webhooks), chat (turns, runs, history, search, publish), read (history, stats, lists). --agent and --sender bind a chat or read token; see docs/security.md.',
  example: 'agentctl tokens create --scope chat --agent assistant --sender alice --label "alice\'s app"',
  options: ['scope', 'agent', 'sender', 'label'],
  arity: [0, 0],
  async run({ client, flags, json, out }: Context) {
    const scopes = flags.scope ?? [];
    if (scopes.length === 0) throw new UsageError('tokens create needs --scope S (admin, agents:write, chat or read; repeat for more)');
    const t = await client.createToken({
      scopes: scopes as TokenScope[],
      ...(flags.agent !== undefined ? { agents: flags.agent } : {}),
      ...(flags.sender !== undefined ? { sender: flags.sender } : {}),
      ...(flags.label !== undefined ? { label: flags.label } : {}),
    });
    if (json) return out.json({ token: t });
    out.line(t.token);
    out.note(`token ${t.id}: ${t.scopes.join(',')}, agents/sender ${bindings(t)}; the secret above is shown only now`);
  },
};

const revoke: Command = {
  name: 'tokens revoke',
  usage: 'ID',
  summary: 'revoke a token: its connections are closed and it is refused from now on',
  example: 'agentctl tokens revoke 3f9c0a61d2e4b587',
  arity: [1, 1],
  async run({ client, args, json, out }: Context) {
    await client.revokeToken(args[0]!);
    if (json) out.json({});
    else out.line(`revoked token ${args[0]!}`);
  },
};

export const tokenCommands: Command[] = [list, create, revoke];
