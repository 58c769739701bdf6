/**
 * The daemon's malloc settings (bin/malloc-defaults.sh, sourced by bin/agentd
 * and `npm start`): added where the environment says nothing about malloc,
 * never over an operator's own setting, and seen by the Node process that
 * bin/agentd starts.
 */
import { execFileSync } from 'node:child_process';
import { platform } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const BIN = resolve(import.meta.dirname, '../../bin');
const onLinux = platform() === 'linux';
const cores = onLinux ? execFileSync('nproc', { encoding: 'utf8' }).trim() : '';
const DEFAULTS = `glibc.malloc.mmap_threshold=131072:glibc.malloc.arena_max=${cores}`;

/** GLIBC_TUNABLES after sourcing the fragment in `sh` with only PATH and `env` set ("unset" when it is not set). */
function tunablesAfter(env: Record<string, string>): string {
  const script = `. "${join(BIN, 'malloc-defaults.sh')}"; printf '%s' "\${GLIBC_TUNABLES-unset}"`;
  return execFileSync('sh', ['-c', script], { env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8' });
}

if (!onLinux) console.log(`malloc defaults: skipped on ${platform()}; the settings are glibc's, and the fragment adds them on Linux only`);

describe.runIf(onLinux)('malloc defaults', () => {
  it('sets a fixed mmap threshold and one arena per core when the environment says nothing about malloc', () => {
    expect(tunablesAfter({})).toBe(DEFAULTS);
  });

  it('keeps tunables of other glibc parts, after its own', () => {
    expect(tunablesAfter({ GLIBC_TUNABLES: 'glibc.pthread.rseq=0' })).toBe(`${DEFAULTS}:glibc.pthread.rseq=0`);
  });

  it("adds nothing over an operator's own malloc setting, in either form", () => {
    expect(tunablesAfter({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=3' })).toBe('glibc.malloc.arena_max=3');
    expect(tunablesAfter({ MALLOC_ARENA_MAX: '4' })).toBe('unset');
    expect(tunablesAfter({ MALLOC_MMAP_THRESHOLD_: '65536' })).toBe('unset');
  });

  it('bin/agentd hands the settings to the Node process it becomes', () => {
    // A preload prints what Node itself sees, before `--version` prints the version.
    const seen = execFileSync(join(BIN, 'agentd'), ['--version'], {
      env: { PATH: process.env.PATH ?? '', NODE_OPTIONS: '--import=data:text/javascript,console.log(process.env.GLIBC_TUNABLES)' },
      encoding: 'utf8',
    });
    expect(seen.split('\n')[0]).toBe(DEFAULTS);
  });
});
