/**
 * `agentctl`: talk to a running agentd. `agentctl --help` lists the commands;
 * each lives in src/cli/commands/. Exit codes: 0 ok, 1 the daemon answered
 * with an error, 2 usage error, 3 cannot connect.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { AgentdClient, AgentdError, ConnectionClosedError } from '../client/index.ts';
import { COMMAND_OPTIONS, type Command, Exit, type Flags, UsageError } from './command.ts';
import { findCommand } from './commands/index.ts';
import { CONNECT_FLAGS, connectOptionsFromFlags, type ConnectFlagValues } from './connect-flags.ts';
import { commandHelp, overview } from './help.ts';
import { Output } from './output.ts';

const OPTIONS = {
  ...CONNECT_FLAGS,
  ...Object.fromEntries(Object.entries(COMMAND_OPTIONS).map(([k, v]) => [k, { type: v.type, multiple: 'multiple' in v }])),
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsConfig['options'];

interface Invocation {
  command: Command;
  args: string[];
  flags: Flags & ConnectFlagValues & { json?: boolean; help?: boolean };
}

function fail(message: string, code: number): number {
  process.stderr.write(`agentctl: ${message}\n`);
  return code;
}

/** Parses the command line; null when help was printed instead. */
function parse(argv: string[], out: Output): Invocation | null {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  const flags = values as Invocation['flags'];
  if (positionals[0] === 'help') positionals.shift();
  const found = findCommand(positionals);
  if (found === null) {
    if (positionals.length === 0 && flags.help === true) {
      out.line(overview());
      return null;
    }
    if (positionals.length === 0) throw new UsageError(`no command given\n\n${overview()}`);
    throw new UsageError(`unknown command "${positionals.slice(0, 2).join(' ')}" (agentctl --help lists them)`);
  }
  const { command, words } = found;
  if (flags.help === true || argv[0] === 'help') {
    out.line(commandHelp(command));
    return null;
  }
  checkInvocation(command, flags, positionals.slice(words));
  return { command, args: positionals.slice(words), flags };
}

function checkInvocation(command: Command, flags: Flags, args: string[]): void {
  for (const name of Object.keys(flags)) {
    if (name in COMMAND_OPTIONS && !(command.options ?? []).includes(name as keyof typeof COMMAND_OPTIONS)) {
      throw new UsageError(`${command.name} takes no --${name} (agentctl ${command.name} --help)`);
    }
  }
  const [min, max] = command.arity;
  if (args.length < min || args.length > max) {
    const want = command.usage === '' ? 'no arguments' : command.usage;
    throw new UsageError(`${command.name} takes ${want}, got ${args.length === 0 ? 'none' : args.map((a) => JSON.stringify(a)).join(' ')}\nusage: agentctl ${command.name} ${command.usage}`.trimEnd());
  }
}

/** Runs one invocation; resolves with the exit code. */
export async function main(argv: string[], out = new Output()): Promise<number> {
  let inv: Invocation | null;
  let client: AgentdClient;
  try {
    inv = parse(argv, out);
    if (inv === null) return Exit.Ok;
    client = await AgentdClient.connect(connectOptionsFromFlags(inv.flags));
  } catch (err) {
    if (err instanceof UsageError) return fail(err.message, Exit.Usage);
    if (err instanceof ConnectionClosedError) return fail(`${err.message}\n(is agentd running? start it with \`agentd\`, or pass --socket/--home/--tcp)`, Exit.CannotConnect);
    if (err instanceof AgentdError) return fail(`error ${err.code}: ${err.message}`, Exit.DaemonError);
    throw err;
  }
  try {
    return (await inv.command.run({ client, args: inv.args, flags: inv.flags, json: inv.flags.json === true, out })) ?? Exit.Ok;
  } catch (err) {
    if (err instanceof AgentdError) return fail(`error ${err.code}: ${err.message}`, Exit.DaemonError);
    if (err instanceof UsageError) return fail(err.message, Exit.Usage);
    if (err instanceof ConnectionClosedError) return fail(err.message, Exit.CannotConnect);
    throw err;
  } finally {
    await client.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.exitCode = fail(err instanceof Error ? (err.stack ?? err.message) : String(err), Exit.DaemonError);
  },
);
