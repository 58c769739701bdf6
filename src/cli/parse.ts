/**
 * agentctl's command line: global flags, the command, its arguments and
 * options. Misspellings are answered with the closest real name.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { VERSION } from '../shared/version.ts';
import { COMMAND_OPTIONS, type Command, type Flags, UsageError } from './command.ts';
import { COMMANDS, findCommand } from './commands/index.ts';
import { CONNECT_FLAGS, type ConnectFlagValues } from './connect-flags.ts';
import { commandHelp, overview } from './help.ts';
import { didYouMean } from './suggest.ts';

const OPTIONS = {
  ...CONNECT_FLAGS,
  ...Object.fromEntries(Object.entries(COMMAND_OPTIONS).map(([k, v]) => [k, { type: v.type, multiple: 'multiple' in v }])),
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'V' },
} as const satisfies ParseArgsConfig['options'];

export type AllFlags = Flags & ConnectFlagValues & { json?: boolean; help?: boolean; version?: boolean };

/** Either text to print (help, version) or a command to run. */
export type Parsed = { kind: 'print'; text: string } | { kind: 'run'; command: Command; args: string[]; flags: AllFlags };

/** "agentctl 0.1.0". */
export const versionText = (): string => `agentctl ${VERSION}`;

/** parseArgs, with an unknown flag answered by the closest known one. */
function readArgv(argv: string[]): { flags: AllFlags; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
    return { flags: values as AllFlags, positionals };
  } catch (err) {
    const unknown = /Unknown option '(-[^']*)'/.exec((err as Error).message)?.[1];
    if (unknown === undefined) throw new UsageError((err as Error).message.split('. To specify')[0]!);
    const known = [...Object.keys(OPTIONS).map((k) => `--${k}`), '-h', '-V'];
    throw new UsageError(`unknown flag ${unknown}${didYouMean(unknown, known, (s) => s)} (agentctl --help lists them; a text starting with "-" goes after --)`);
  }
}

/** The error for words that name no command, with the closest command name. */
function unknownCommand(positionals: string[]): UsageError {
  const [first, second] = positionals as [string, string | undefined];
  const isGroup = second !== undefined && COMMANDS.some((c) => c.name.startsWith(`${first} `));
  const typed = isGroup ? `${first} ${second}` : first;
  const names = COMMANDS.map((c) => c.name).filter((n) => (isGroup ? n.includes(' ') : true));
  const firstWords = new Set(COMMANDS.map((c) => c.name.split(' ')[0]!));
  return new UsageError(`unknown command "${typed}"${didYouMean(typed, isGroup ? names : [...firstWords, 'help'])} (agentctl --help lists them)`);
}

function checkInvocation(command: Command, flags: AllFlags, args: string[]): void {
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

/** Reads the command line; throws UsageError for anything wrong with it. */
export function parseCommandLine(argv: string[]): Parsed {
  const { flags, positionals } = readArgv(argv);
  if (flags.version === true) return { kind: 'print', text: versionText() };
  const asksHelp = positionals[0] === 'help';
  if (asksHelp) positionals.shift();
  if (positionals.length === 0) {
    if (asksHelp || flags.help === true) return { kind: 'print', text: overview() };
    throw new UsageError(`no command given\n\n${overview()}`);
  }
  const found = findCommand(positionals);
  if (found === null) throw unknownCommand(positionals);
  const { command, words } = found;
  if (asksHelp || flags.help === true) return { kind: 'print', text: commandHelp(command) };
  const args = positionals.slice(words);
  checkInvocation(command, flags, args);
  return { kind: 'run', command, args, flags };
}
