/**
 * What an agentctl command is: its name, arguments, help text, the options
 * it accepts, and what it does with a connected client.
 */
import { readFileSync } from 'node:fs';
import type { AgentdClient } from '../client/index.ts';
import type { ConnectFlagValues } from './connect-flags.ts';
import type { Output } from './output.ts';
import { UsageError } from './usage-error.ts';

export { Exit } from './exit-codes.ts';

export { UsageError } from './usage-error.ts';

/**
 * Every command option, by name. parseArgs needs one type per name, so all
 * commands share this table and each lists the names it accepts.
 */
export const COMMAND_OPTIONS = {
  sender: { type: 'string', help: '--sender S          the conversation\'s sender (default: the daemon\'s default, "user")' },
  guest: { type: 'string', help: '--guest AGENT       let another registered agent answer this one turn inside this conversation' },
  ephemeral: { type: 'boolean', help: '--ephemeral         run on a fresh history and store nothing' },
  'on-busy': { type: 'string', help: '--on-busy MODE      enqueue (default), reject or interrupt when the conversation is busy' },
  agent: { type: 'string', multiple: true, help: '--agent A           only this agent\'s (tokens create: an agent the token may address; repeat for more)' },
  once: { type: 'boolean', help: '--once              subscribe: remove the subscription when it first fires; top: print one frame and exit' },
  limit: { type: 'string', help: '--limit N           most results (search: 1-20, default 5; runs: 1-1000, default 100)' },
  context: { type: 'string', help: '--context N         messages shown around each hit (default 1)' },
  active: { type: 'boolean', help: '--active            only conversations held in memory now, with running/queued turns' },
  prompt: { type: 'string', help: '--prompt TEXT       the instruction sent to the model (default: a built-in one)' },
  command: { type: 'string', help: '--command CMD       stdio server: the program to run (in $AGENTD_HOME)' },
  arg: { type: 'string', multiple: true, help: '--arg A             stdio server: one argument (repeat for more; --arg=-x for one starting with "-")' },
  env: { type: 'string', multiple: true, help: '--env K=V           stdio server: one environment variable (repeat; the server gets these plus PATH)' },
  url: { type: 'string', help: '--url URL           Streamable HTTP server: its http:// or https:// endpoint' },
  header: { type: 'string', multiple: true, help: '--header K=V        HTTP server: one header sent with every request (repeat)' },
  eager: { type: 'boolean', help: '--eager             connect now and at start-up, not at the first turn that needs it' },
  'no-auto-restart': { type: 'boolean', help: '--no-auto-restart   do not reconnect when the server dies' },
  cron: { type: 'string', help: '--cron EXPR         a cron expression: 5 fields, or 6 with seconds first' },
  every: { type: 'string', help: '--every MS          every MS milliseconds (at least 1000)' },
  at: { type: 'string', help: '--at TIME           once, at an RFC 3339 time (2026-12-24T09:00:00Z)' },
  timezone: { type: 'string', help: '--timezone TZ       the cron expression\'s IANA time zone (default UTC)' },
  'catch-up': { type: 'string', help: '--catch-up MODE     none (default) or one: fire a tick missed while stopped once at start' },
  events: { type: 'string', help: '--events K,K        event kinds: turn_end, approval_required, tool_start, tool_result, chain_cut' },
  agents: { type: 'string', help: '--agents A,A        only these agents\' events (default: every agent)' },
  'secret-env': { type: 'string', help: '--secret-env VAR    the environment variable holding the signing secret (kept off the command line)' },
  'max-attempts': { type: 'string', help: '--max-attempts N    attempts per delivery (1-100, default 8)' },
  status: { type: 'string', help: '--status S          runs in this status (queued, running, waiting, done, failed, cancelled, stalled); webhook deliveries: pending, delivered or failed' },
  detach: { type: 'boolean', help: '--detach            the turn goes on if this connection drops (agentctl join picks it up)' },
  after: { type: 'string', help: '--after SEQ         only the frames after this seq (default 0: all)' },
  scope: { type: 'string', multiple: true, help: '--scope S           a token scope: admin, agents:write, chat or read (repeat for more)' },
  label: { type: 'string', help: '--label TEXT        a token\'s label, for people' },
} as const;

export type OptionName = keyof typeof COMMAND_OPTIONS;

export interface Flags {
  sender?: string;
  guest?: string;
  ephemeral?: boolean;
  'on-busy'?: string;
  agent?: string[];
  once?: boolean;
  limit?: string;
  context?: string;
  prompt?: string;
  active?: boolean;
  command?: string;
  arg?: string[];
  env?: string[];
  url?: string;
  header?: string[];
  eager?: boolean;
  'no-auto-restart'?: boolean;
  cron?: string;
  every?: string;
  at?: string;
  timezone?: string;
  'catch-up'?: string;
  events?: string;
  agents?: string;
  'secret-env'?: string;
  'max-attempts'?: string;
  status?: string;
  detach?: boolean;
  after?: string;
  scope?: string[];
  label?: string;
}

/** What a command that needs no daemon (profile, completion) gets. */
export interface LocalContext {
  /** Positional arguments after the command's name. */
  args: string[];
  flags: Flags & ConnectFlagValues;
  json: boolean;
  out: Output;
  env: NodeJS.ProcessEnv;
  /** Every command, for the ones that describe the others (completion). */
  commands: readonly Command[];
}

export interface Context {
  client: AgentdClient;
  /** Positional arguments after the command's name. */
  args: string[];
  flags: Flags;
  json: boolean;
  out: Output;
}

interface CommandInfo {
  /** One word, or a group and a word ("agents create"). */
  name: string;
  /** Positional arguments, for the usage line ("AGENT TEXT..."). */
  usage: string;
  summary: string;
  /** More help, shown by `agentctl COMMAND --help`. */
  details?: string;
  example: string;
  options?: OptionName[];
  /** Fewest and most positional arguments (most: Infinity when the rest is joined as text). */
  arity: [number, number];
}

/** A command that talks to the daemon: agentctl connects before it runs. */
export interface RemoteCommand extends CommandInfo {
  local?: false;
  /** Resolves with the exit code when it is not 0 (a command that printed its own message for it). */
  run(ctx: Context): Promise<void | number>;
}

/** A command that works on this machine alone and never connects. */
export interface LocalCommand extends CommandInfo {
  local: true;
  run(ctx: LocalContext): Promise<void | number>;
}

export type Command = RemoteCommand | LocalCommand;

/** Joins the positional arguments from `from` as one text (so quoting is optional). */
export function restText(args: string[], from: number): string {
  return args.slice(from).join(' ');
}

export function parseUint(value: string, what: string): number {
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) throw new UsageError(`${what} must be a non-negative integer, got "${value}"`);
  return Number(value);
}

/** A JSON argument, or `@FILE` to read it from a file (`@-` for stdin). */
export function parseJsonArg(value: string, what: string): unknown {
  let text = value;
  if (value.startsWith('@')) {
    const file = value.slice(1);
    try {
      text = readFileSync(file === '-' ? 0 : file, 'utf8');
    } catch (err) {
      throw new UsageError(`cannot read ${what} from ${file}: ${(err as Error).message}`);
    }
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new UsageError(`${what} is not valid JSON: ${(err as Error).message}`);
  }
}

/** The one agent `--agent` names, for commands that take one (UsageError when repeated). */
export function oneAgent(flags: Flags): { agent?: string } {
  const given = flags.agent ?? [];
  if (given.length > 1) throw new UsageError(`--agent names one agent here, got ${given.length}`);
  return given.length === 1 ? { agent: given[0]! } : {};
}

/** Pair arguments: `sender` only when given. */
export function senderOf(flags: Flags): { sender?: string } {
  return flags.sender !== undefined ? { sender: flags.sender } : {};
}

/** "assistant/alice", or "assistant" when the daemon's default sender is meant. */
export function pairLabel(agent: string, sender: string | undefined): string {
  return sender === undefined ? `${agent} (default sender)` : `${agent}/${sender}`;
}
