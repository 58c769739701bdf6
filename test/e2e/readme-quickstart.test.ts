/**
 * The README's quick start and tour, run as written: the quick start's sh
 * block starts the daemon (its `npm ci` line skipped: this checkout is
 * installed), then every `$ COMMAND` of the README's console blocks runs in
 * order through bash from the repository root, as a user would type it,
 * and must exit 0 printing what the README shows under it. The one change:
 * `export AGENTD_HOME=/tmp/agentd` points at a fresh temporary home instead.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { finished, untilOutput, type CtlResult } from '../helpers/cli.ts';
import { waitFor } from '../helpers/daemon.ts';
import { normalize, parseExport, readmeExamples, type ConsoleStep } from '../helpers/readme-blocks.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
/** The home the README exports, and the clone's path as the README shows it in output. */
const README_HOME = '/tmp/agentd';
const SHOWN_ROOT = '/path/to/agentd';

/** Listing commands: run again until they match, since a fired turn may end after `publish` answers. */
function onlyReads(command: string): boolean {
  return /^\.\/bin\/agentctl\.mjs (history|subscriptions|conversations|search|mcps(?! (add|rm|reconnect)\b))\b/.test(command);
}

function baseEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of ['AGENTD_HOME', 'AGENTD_TOKEN', 'AGENTD_LOG_LEVEL', 'NO_COLOR', 'FORCE_COLOR']) delete env[k];
  return env;
}

function bash(command: string, env: NodeJS.ProcessEnv): ChildProcess {
  return spawn('bash', ['-c', command], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Applies `export NAME=VALUE` to `env` (the README's home becomes `home`); false for any other command. */
function applyExport(command: string, env: NodeJS.ProcessEnv, home: string): boolean {
  const exported = parseExport(command);
  if (exported === null) return false;
  const [name, value] = exported;
  env[name] = value === README_HOME ? home : value;
  return true;
}

/** Runs the quick start's sh block; its one long-running command is the daemon, started in the background. */
async function startQuickStartDaemon(commands: string[], env: NodeJS.ProcessEnv, home: string): Promise<ChildProcess> {
  const rest = commands.filter((c) => !/^npm ci\b/.test(c) && !applyExport(c, env, home));
  expect(rest, 'the quick start sh block: npm ci, exports, then the daemon').toEqual([expect.stringMatching(/^\.\/bin\/agentd\b/)]);
  const daemon = bash(`exec ${rest[0]!}`, env);
  let stderr = '';
  daemon.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  onTestFinished(() => {
    if (daemon.exitCode === null && daemon.signalCode === null) daemon.kill('SIGKILL');
  });
  const exited = new Promise<never>((_, reject) => daemon.on('exit', (code) => reject(new Error(`the daemon exited (${code}) before ready:\n${stderr}`))));
  await Promise.race([untilOutput(daemon.stdout!, (t) => t.includes(' ready: ')), exited]);
  return daemon;
}

/** Runs one console step; a listing is run again until its output matches. */
async function runStep(step: ConsoleStep, env: NodeJS.ProcessEnv, home: string): Promise<void> {
  if (applyExport(step.command, env, home)) {
    expect(step.expected.trim(), `${step.command} prints nothing`).toBe('');
    return;
  }
  const want = normalize(step.expected);
  const shown = (r: CtlResult): string => normalize(r.stderr + r.stdout, { [home]: README_HOME, [ROOT]: SHOWN_ROOT });
  const run = (): Promise<CtlResult> => finished(bash(step.command, env));
  let result = await run();
  if (onlyReads(step.command)) {
    await waitFor(async () => {
      if (result.code === 0 && shown(result) === want) return true;
      result = await run();
      return false;
    }, step.command, 20_000).catch(() => {}); // the expectations below say what differs
  }
  expect(result.code, `exit code of: ${step.command}\n${result.stderr}`).toBe(0);
  expect(shown(result), `output of: ${step.command}`).toBe(want);
}

describe('README', () => {
  it('quick start and tour: every command runs as written and prints what the README shows', { timeout: 300_000 }, async () => {
    const { daemonCommands, steps } = readmeExamples(README);
    expect(steps.length).toBeGreaterThan(5);
    const home = mkdtempSync(join(tmpdir(), 'agentd-readme-'));
    onTestFinished(() => rmSync(home, { recursive: true, force: true }));
    // Two terminals: the daemon's, and the one the console blocks are typed in.
    const daemon = await startQuickStartDaemon(daemonCommands, baseEnv(), home);
    const terminal = baseEnv();
    for (const step of steps) await runStep(step, terminal, home);

    // Ctrl-C in the daemon's terminal: it exits 0 and removes its socket.
    const exit = new Promise<number | null>((r) => daemon.on('exit', (code) => r(code)));
    daemon.kill('SIGINT');
    expect(await exit).toBe(0);
    expect(existsSync(join(home, 'run', 'agentd.sock'))).toBe(false);
  });

  it('names the test command CI runs', () => {
    expect(readFileSync(join(ROOT, '.ci', 'run'), 'utf8')).toMatch(/^npm test\b/m);
    expect(README).toMatch(/^npm test\b/m);
  });
});
