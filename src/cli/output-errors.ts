/**
 * What agentctl does when its output cannot be written. A reader that went
 * away (`agentctl history a | head -1`: EPIPE) ends it quietly with exit 0,
 * as the reader has what it wanted; any other write error (a full disk) is
 * one line on stderr and exit 6. Node reports both as 'error' events on the
 * stream, for pipes and files alike.
 */
import { Exit } from './exit-codes.ts';
import { reportFailure } from './failure.ts';

export function guardOutput(json: boolean, stdout: NodeJS.WriteStream = process.stdout, stderr: NodeJS.WriteStream = process.stderr): void {
  stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(Exit.Ok);
    try {
      reportFailure({ exit: Exit.OutputFailed, kind: 'output', message: `cannot write the output: ${err.code ?? err.message}` }, json, stderr);
    } finally {
      process.exit(Exit.OutputFailed);
    }
  });
  // Nowhere is left to say anything: end with the code earned so far.
  stderr.on('error', (err: NodeJS.ErrnoException) => {
    const earned = typeof process.exitCode === 'number' ? process.exitCode : Exit.Ok;
    process.exit(err.code === 'EPIPE' || earned !== Exit.Ok ? earned : Exit.OutputFailed);
  });
}
