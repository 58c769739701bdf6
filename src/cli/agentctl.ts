/**
 * `agentctl`: talk to a running agentd. `agentctl --help` lists the commands;
 * each lives in src/cli/commands/. Exit codes are in exit-codes.ts; every
 * error is reported by failure.ts, never as a stack trace.
 */
import { AgentdClient } from '../client/index.ts';
import type { LocalCommand, RemoteCommand } from './command.ts';
import { COMMANDS } from './commands/index.ts';
import { connectOptionsFromFlags, type ConnectFlagValues } from './connect-flags.ts';
import { Exit } from './exit-codes.ts';
import { failureOf, reportFailure } from './failure.ts';
import { guardOutput } from './output-errors.ts';
import { Output } from './output.ts';
import { type AllFlags, parseCommandLine } from './parse.ts';
import { findProfile, profilesPath, withProfile } from './profiles.ts';

interface Run<C> {
  command: C;
  args: string[];
  flags: AllFlags;
  out: Output;
  env: NodeJS.ProcessEnv;
}

/** The connection flags, with --profile's values under them. */
function connectFlags(flags: AllFlags, env: NodeJS.ProcessEnv): ConnectFlagValues {
  const given: ConnectFlagValues = { socket: flags.socket, home: flags.home, tcp: flags.tcp, token: flags.token };
  return flags.profile === undefined ? given : withProfile(given, findProfile(flags.profile, profilesPath(env)));
}

async function runRemote({ command, args, flags, out, env }: Run<RemoteCommand>): Promise<number> {
  const json = flags.json === true;
  let client: AgentdClient;
  let overTcp = false;
  try {
    const resolved = connectFlags(flags, env);
    overTcp = resolved.tcp !== undefined;
    client = await AgentdClient.connect(connectOptionsFromFlags(resolved, env));
  } catch (err) {
    return reportFailure(failureOf(err, 'connect', overTcp), json, out.stderr);
  }
  try {
    return (await command.run({ client, args, flags, json, out })) ?? Exit.Ok;
  } catch (err) {
    return reportFailure(failureOf(err, 'run'), json, out.stderr);
  } finally {
    await client.close().catch(() => undefined); // a lost connection has nothing left to close
  }
}

async function runLocal({ command, args, flags, out, env }: Run<LocalCommand>): Promise<number> {
  const json = flags.json === true;
  try {
    return (await command.run({ args, flags, json, out, env, commands: COMMANDS })) ?? Exit.Ok;
  } catch (err) {
    return reportFailure(failureOf(err, 'run'), json, out.stderr);
  }
}

/** Runs one invocation; resolves with the exit code. */
export async function main(argv: string[], out = new Output(), env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let parsed;
  try {
    parsed = parseCommandLine(argv);
  } catch (err) {
    return reportFailure(failureOf(err, 'parse'), argv.includes('--json'), out.stderr);
  }
  if (parsed.kind === 'print') {
    out.line(parsed.text);
    return Exit.Ok;
  }
  const { command, args, flags } = parsed;
  return command.local === true ? runLocal({ command, args, flags, out, env }) : runRemote({ command, args, flags, out, env });
}

const argv = process.argv.slice(2);
guardOutput(argv.includes('--json'));
main(argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.exitCode = reportFailure(failureOf(err, 'run'), argv.includes('--json'));
  },
);
