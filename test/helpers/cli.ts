/**
 * Runs agentctl as a separate process the way a person runs it (bin/agentctl.mjs:
 * the built dist/ when it is compiled from the current source, else the source
 * through tsx), against a test daemon.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable } from 'node:stream';
import { resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');
export const AGENTCTL = resolve(ROOT, 'bin/agentctl.mjs');

export interface CtlResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Starts `agentctl ARGS` with `--socket` unless `socket` is null; the caller collects output (and writes its stdin, with `stdin: 'pipe'`). */
export function spawnCtl(socket: string | null, args: string[], env: Record<string, string | undefined> = {}, stdin: 'ignore' | 'pipe' = 'ignore'): ChildProcess {
  const full = socket === null ? args : [...args, '--socket', socket];
  const childEnv: Record<string, string | undefined> = { ...process.env, NO_COLOR: undefined, FORCE_COLOR: undefined, ...env };
  for (const k of Object.keys(childEnv)) if (childEnv[k] === undefined) delete childEnv[k];
  return spawn(process.execPath, [AGENTCTL, ...full], { cwd: ROOT, env: childEnv as NodeJS.ProcessEnv, stdio: [stdin, 'pipe', 'pipe'] });
}

/** Collects a spawned process's output until it exits. */
export function finished(proc: ChildProcess): Promise<CtlResult> {
  let stdout = '';
  let stderr = '';
  proc.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolvePromise) => proc.on('close', (code) => resolvePromise({ code, stdout, stderr })));
}

/** Runs `agentctl ARGS` to completion. */
export function ctl(socket: string | null, args: string[], env: Record<string, string | undefined> = {}): Promise<CtlResult> {
  return finished(spawnCtl(socket, args, env));
}

/**
 * A barrier on a running command's output: resolves once the text `stream`
 * has produced since this call satisfies `pred`.
 */
export function untilOutput(stream: Readable, pred: (text: string) => boolean): Promise<void> {
  let text = '';
  return new Promise((resolvePromise) => {
    const check = (b: Buffer): void => {
      text += b.toString();
      if (!pred(text)) return;
      stream.off('data', check);
      resolvePromise();
    };
    stream.on('data', check);
  });
}
