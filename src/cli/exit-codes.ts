/**
 * agentctl's exit codes, one per kind of outcome, so a script can tell "fix
 * the command line" from "start the daemon" from "the model failed".
 */
export const Exit = {
  Ok: 0,
  /** The daemon answered with an error (unknown agent, busy, wrong token...). */
  DaemonError: 1,
  /** The command line, a profile or the profiles file is wrong. */
  Usage: 2,
  /** No daemon answered at the address. */
  CannotConnect: 3,
  /** The turn ran and ended with an error or was cancelled. */
  TurnFailed: 4,
  /** The connection broke after it was made (the daemon died or went away mid-command). */
  ConnectionLost: 5,
  /** Output could not be written (a full disk, say). A reader that went away (EPIPE) is not an error. */
  OutputFailed: 6,
  /** A bug in agentctl. */
  Internal: 70,
} as const;

export type ExitCode = (typeof Exit)[keyof typeof Exit];

/** The table `--help` and docs/agentctl.md show. */
export const EXIT_TABLE: readonly [ExitCode, string][] = [
  [Exit.Ok, 'success (also when the reader of stdout went away, as with `| head`)'],
  [Exit.DaemonError, 'the daemon refused the request: its error code is printed ("error 404: ...")'],
  [Exit.Usage, 'bad usage: unknown command or flag, wrong arguments, a bad profile'],
  [Exit.CannotConnect, 'cannot connect: no daemon at the socket or address'],
  [Exit.TurnFailed, 'the turn failed or was cancelled (a provider error, kill, ...)'],
  [Exit.ConnectionLost, 'the connection was lost mid-command (the daemon stopped or died)'],
  [Exit.OutputFailed, 'cannot write the output (e.g. the disk is full)'],
  [Exit.Internal, 'a bug in agentctl (please report it)'],
];
