/**
 * What went wrong, as one line for a person or one JSON object for a script,
 * and which exit code it earns. Every error agentctl reports passes here, so
 * none reaches the user as a stack trace.
 */
import type { Writable } from 'node:stream';
import { AgentdError, Code, ConnectionClosedError } from '../client/index.ts';
import { UsageError } from './command.ts';
import { Exit, type ExitCode } from './exit-codes.ts';

/** A turn that ran and ended with an error or was cancelled (exit 4). */
export class TurnFailedError extends Error {
  override name = 'TurnFailedError';
  constructor(
    /** The daemon's code for it: 499 cancelled, 500 failed. */
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** A turn's end: a TurnFailedError unless it ended well. */
export function turnFailure(stopReason: string, error: string): TurnFailedError {
  const cancelled = stopReason === 'cancelled';
  const how = cancelled ? 'cancelled' : stopReason === 'error' ? 'failed' : `failed (${stopReason})`;
  return new TurnFailedError(cancelled ? Code.Cancelled : Code.Internal, `turn ${how}: ${error}`);
}

/** Where the error happened: while reading the command line, connecting, or running the command. */
export type Phase = 'parse' | 'connect' | 'run';

export type FailureKind = 'usage' | 'daemon' | 'cannot_connect' | 'turn_failed' | 'connection_lost' | 'output' | 'internal';

export interface Failure {
  exit: ExitCode;
  kind: FailureKind;
  /** The daemon's error code, when it sent one. */
  code?: number;
  message: string;
}

export const TOKEN_HINT =
  'over TCP agentd wants its token: pass --token T, set AGENTD_TOKEN, or pass --home DIR of the daemon so its token file DIR/token is read (agentctl profile add keeps these)';
const CONNECT_HINT = 'is agentd running? start it with `agentd`, or pass --socket, --home, --tcp or --profile';

function daemonFailure(err: AgentdError, phase: Phase, overTcp: boolean): Failure {
  const hint = phase === 'connect' && overTcp && err.code === Code.Unauthorized ? `\n${TOKEN_HINT}` : '';
  return { exit: Exit.DaemonError, kind: 'daemon', code: err.code, message: `error ${err.code}: ${err.message}${hint}` };
}

/** Sorts any thrown value into a Failure. */
export function failureOf(err: unknown, phase: Phase, overTcp = false): Failure {
  if (err instanceof UsageError) return { exit: Exit.Usage, kind: 'usage', message: err.message };
  if (err instanceof TurnFailedError) return { exit: Exit.TurnFailed, kind: 'turn_failed', code: err.code, message: err.message };
  if (err instanceof AgentdError) return daemonFailure(err, phase, overTcp);
  if (phase === 'connect') {
    const message = err instanceof Error ? err.message : String(err);
    return { exit: Exit.CannotConnect, kind: 'cannot_connect', message: `${message}\n(${CONNECT_HINT})` };
  }
  if (err instanceof ConnectionClosedError) {
    return { exit: Exit.ConnectionLost, kind: 'connection_lost', message: `lost the connection to agentd: ${err.message} (did the daemon stop?)` };
  }
  const message = err instanceof Error ? err.message : String(err);
  const stack = process.env.AGENTCTL_DEBUG && err instanceof Error && err.stack ? `\n${err.stack}` : ' (AGENTCTL_DEBUG=1 shows where)';
  return { exit: Exit.Internal, kind: 'internal', message: `internal error: ${message}${stack}` };
}

/** Writes the failure to stderr: one `agentctl: ...` text, or with --json one JSON line. */
export function reportFailure(f: Failure, json: boolean, stderr: Writable = process.stderr): ExitCode {
  if (json) {
    const error = { kind: f.kind, exit: f.exit, ...(f.code !== undefined ? { code: f.code } : {}), message: f.message };
    stderr.write(`${JSON.stringify({ error })}\n`);
  } else {
    stderr.write(`agentctl: ${f.message}\n`);
  }
  return f.exit;
}
