/** MCP servers of agents: list, add, rm, reconnect, events (PROTOCOL §4.10). */
import type { McpEvent, McpInfo, McpServerConfig } from '../../client/index.ts';
import { type Command, type Context, type Flags, UsageError } from '../command.ts';
import type { Output } from '../output.ts';

/** Shown instead of env and header values: the human output never prints secrets (--json does). */
const REDACTED = '[redacted]';

/** `agent/name  transport  status  N tools  error`, the status coloured. */
function serverRow(m: McpEvent | McpInfo, out: Output): string[] {
  const s = out.out;
  const paint = m.status === 'connected' ? s.green : m.status === 'failed' ? s.red : s.yellow;
  return [`${m.agent}/${m.name}`, m.transport, paint(m.status), `${m.tool_count} tool${m.tool_count === 1 ? '' : 's'}`, m.error];
}

/** `K=V` pairs into a map; a pair without "=" is a usage error naming the flag. */
function pairs(values: string[] | undefined, flag: string): Record<string, string> | undefined {
  if (values === undefined) return undefined;
  const map: Record<string, string> = {};
  for (const v of values) {
    const eq = v.indexOf('=');
    if (eq <= 0) throw new UsageError(`--${flag} takes K=V, got "${v}"`);
    map[v.slice(0, eq)] = v.slice(eq + 1);
  }
  return map;
}

/** The `mcps` entry the flags describe: exactly one of --command (stdio) and --url (HTTP). */
export function serverConfigOf(flags: Flags): McpServerConfig {
  const stdio = flags.command !== undefined;
  if (stdio === (flags.url !== undefined)) throw new UsageError('mcps add takes exactly one of --command CMD (stdio) and --url URL (Streamable HTTP)');
  if (stdio && flags.header !== undefined) throw new UsageError('--header is for --url servers; a --command server takes --env');
  if (!stdio && (flags.arg !== undefined || flags.env !== undefined)) throw new UsageError('--arg and --env are for --command servers; a --url server takes --header');
  const config: McpServerConfig = stdio
    ? { command: flags.command!, args: flags.arg ?? [], env: pairs(flags.env, 'env') ?? {} }
    : { url: flags.url!, headers: pairs(flags.header, 'header') ?? {} };
  if (flags.eager === true) config.eager = true;
  if (flags['no-auto-restart'] === true) config.auto_restart = false;
  return config;
}

const redactValues = (m: Record<string, string> | undefined): string =>
  Object.keys(m ?? {}).map((k) => `${k}=${REDACTED}`).join(' ');

/** The settings of a server, one per line, env and header values redacted. */
function configLines(c: McpServerConfig): string[] {
  const lines: string[] = [];
  if (c.command !== undefined) lines.push(`command: ${[c.command, ...(c.args ?? [])].map((a) => (/[\s"']/.test(a) ? JSON.stringify(a) : a)).join(' ')}`);
  if (c.url !== undefined) lines.push(`url: ${c.url}`);
  if (Object.keys(c.env ?? {}).length > 0) lines.push(`env: ${redactValues(c.env)}`);
  if (Object.keys(c.headers ?? {}).length > 0) lines.push(`headers: ${redactValues(c.headers)}`);
  lines.push(`eager: ${c.eager === true}, auto_restart: ${c.auto_restart !== false}`);
  return lines;
}

const list: Command = {
  name: 'mcps',
  usage: '[AGENT]',
  summary: 'list MCP servers (every agent\'s, or one\'s): transport, status, tool count and error',
  example: 'agentctl mcps assistant',
  arity: [0, 1],
  async run({ client, args, json, out }: Context) {
    const mcps = await client.listMcps(args[0]);
    if (json) return out.json({ mcps });
    if (mcps.length === 0) return out.line(`no MCP servers${args[0] !== undefined ? ` for ${args[0]}` : ''} (add one with agentctl mcps add)`);
    out.table(mcps.map((m) => serverRow(m, out)));
  },
};

const add: Command = {
  name: 'mcps add',
  usage: 'AGENT NAME',
  summary: 'add an MCP server to an agent, or replace the one of that name (its tools become NAME__TOOL)',
  details: 'Give --command (a stdio server, with --arg and --env) or --url (Streamable HTTP, with --header).\nEnv and header values are shown as [redacted]; --json shows the daemon\'s reply as it is.',
  example: 'agentctl mcps add assistant fs --command npx --arg=-y --arg @modelcontextprotocol/server-filesystem --arg /srv/docs --eager',
  options: ['command', 'arg', 'env', 'url', 'header', 'eager', 'no-auto-restart'],
  arity: [2, 2],
  async run({ client, args, flags, json, out }: Context) {
    const info = await client.upsertMcp(args[0]!, args[1]!, serverConfigOf(flags));
    if (json) return out.json(info);
    out.table([serverRow(info, out)]);
    for (const line of configLines(info.config)) out.line(`  ${line}`);
  },
};

const rm: Command = {
  name: 'mcps rm',
  usage: 'AGENT NAME',
  summary: 'remove an MCP server from an agent and stop it',
  example: 'agentctl mcps rm assistant fs',
  arity: [2, 2],
  async run({ client, args, json, out }: Context) {
    await client.deleteMcp(args[0]!, args[1]!);
    if (json) out.json({});
    else out.line(`removed MCP server ${args[1]!} of ${args[0]!}`);
  },
};

const reconnect: Command = {
  name: 'mcps reconnect',
  usage: 'AGENT NAME',
  summary: 'drop an MCP server\'s connection and connect afresh (watch it with agentctl mcps events)',
  example: 'agentctl mcps reconnect assistant fs',
  arity: [2, 2],
  async run({ client, args, json, out }: Context) {
    await client.reconnectMcp(args[0]!, args[1]!);
    if (json) out.json({});
    else out.line(`reconnecting MCP server ${args[1]!} of ${args[0]!}`);
  },
};

const events: Command = {
  name: 'mcps events',
  usage: '[AGENT]',
  summary: 'watch MCP connections change status (connecting, connected, failed, disconnected) until Ctrl-C',
  details: '"watching MCP events" on stderr means the watch is in place. --json prints every raw event.',
  example: 'agentctl mcps events assistant',
  arity: [0, 1],
  async run({ client, args, json, out }: Context) {
    const stream = client.mcpEvents(args[0]);
    const stop = new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    const tail = (async () => {
      for await (const ev of stream) {
        if (json) out.json(ev);
        else out.line([out.out.dim(ev.timestamp.slice(11, 23)), ...serverRow(ev, out)].filter((c) => c !== '').join('  '));
      }
    })();
    await client.ping(); // answered once the daemon has the watch in place
    out.note(out.err.dim(`watching MCP events${args[0] !== undefined ? ` of ${args[0]}` : ''} (Ctrl-C to stop)`));
    await Promise.race([tail, stop]);
    await client.closeEvents(stream.requestId).catch(() => {}); // the daemon may have ended it (shutdown)
    await tail.catch(() => {});
  },
};

export const mcpCommands: Command[] = [list, add, rm, reconnect, events];
