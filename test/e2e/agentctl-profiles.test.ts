/**
 * agentctl's saved connection profiles (a 0600 file under XDG_CONFIG_HOME)
 * and its shell completion scripts, run the way a shell would run them.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ctl } from '../helpers/cli.ts';
import { cleanup, startDaemon, type Daemon } from '../helpers/daemon.ts';

vi.setConfig({ testTimeout: 180_000 });

let d: Daemon;
let config: string;
const profilesFile = () => join(config, 'agentd', 'profiles.json');
const run = (...args: string[]) => ctl(null, args, { XDG_CONFIG_HOME: config, AGENTD_TOKEN: '', AGENTD_HOME: join(config, 'no-home') });

beforeAll(async () => {
  config = mkdtempSync(join(tmpdir(), 'agentctl-config-'));
  d = await startDaemon({ config: { agents: { assistant: { model: 'echo' } } } });
});
afterAll(async () => {
  await cleanup(d);
  rmSync(config, { recursive: true, force: true });
});

describe('profiles', () => {
  it('profile add saves a 0600 file; --profile connects with it; list hides tokens; remove forgets', async () => {
    const token = readFileSync(join(d.home, 'token'), 'utf8').trim();
    const added = await run('profile', 'add', 'local', '--socket', d.socketPath);
    expect(added).toMatchObject({ code: 0, stdout: `saved profile local in ${profilesFile()}; use it with agentctl --profile local COMMAND\n` });
    expect((await run('profile', 'add', 'tcp', '--tcp', `127.0.0.1:${d.port}`, '--token', token))).toMatchObject({ code: 0 });
    expect(statSync(profilesFile()).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(profilesFile(), 'utf8'))).toEqual({ profiles: { local: { socket: d.socketPath }, tcp: { tcp: `127.0.0.1:${d.port}`, token } } });

    const [viaSocket, viaTcp, list, listJson] = await Promise.all([run('--profile', 'local', 'ping'), run('ping', '--profile', 'tcp'), run('profile', 'list'), run('profile', '--json')]);
    expect(viaSocket.stdout).toMatch(/^pong in/);
    expect(viaTcp.stdout).toMatch(/^pong in/);
    expect(list.stdout).toBe(`NAME   CONNECTS TO\nlocal  socket ${d.socketPath}\ntcp    tcp 127.0.0.1:${d.port}, token saved\n`);
    expect(list.stdout + listJson.stdout).not.toContain(token);
    expect(JSON.parse(listJson.stdout)).toEqual([{ name: 'local', socket: d.socketPath }, { name: 'tcp', tcp: `127.0.0.1:${d.port}`, token: '(saved)' }]);

    // An address on the command line replaces the profile's.
    const overridden = await run('--profile', 'local', '--socket', join(config, 'no.sock'), 'ping');
    expect(overridden.code).toBe(3);

    expect(await run('profile', 'remove', 'local')).toMatchObject({ code: 0, stdout: 'removed profile local\n' });
    expect(Object.keys(JSON.parse(readFileSync(profilesFile(), 'utf8')).profiles)).toEqual(['tcp']);
  });

  it('an unknown profile, a bad name, a profile without an address and a broken file are usage errors that say why', async () => {
    const other = mkdtempSync(join(tmpdir(), 'agentctl-config-'));
    const inOther = (...args: string[]) => ctl(null, args, { XDG_CONFIG_HOME: other });
    try {
      expect(await inOther('--profile', 'prod', 'ping')).toMatchObject({ code: 2, stderr: expect.stringContaining('unknown profile "prod": there are no profiles in') });
      expect(await inOther('profile', 'add', 'prod', '--tcp', 'h:1')).toMatchObject({ code: 0 });
      const [typo, badName, noAddress, badTcp] = await Promise.all([
        inOther('--profile', 'prdo', 'ping'),
        inOther('profile', 'add', '../x', '--socket', '/s'),
        inOther('profile', 'add', 'x'),
        inOther('profile', 'add', 'x', '--tcp', 'nohost'),
      ]);
      expect(typo).toMatchObject({ code: 2, stderr: 'agentctl: unknown profile "prdo" (did you mean "prod"?); the profiles are prod (agentctl profile list)\n' });
      expect(badName).toMatchObject({ code: 2, stderr: expect.stringContaining('a profile name is letters, digits') });
      expect(noAddress).toMatchObject({ code: 2, stderr: expect.stringContaining('profile add needs an address') });
      expect(badTcp).toMatchObject({ code: 2, stderr: expect.stringContaining('--tcp must be HOST:PORT') });
      writeFileSync(join(other, 'agentd', 'profiles.json'), '{"profiles": {"prod": {"tcp": 5}}}');
      const broken = await inOther('--profile', 'prod', 'ping');
      expect(broken).toMatchObject({ code: 2, stderr: expect.stringMatching(/profiles\.json is not \{"profiles".*profiles\.prod\.tcp/) });
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});

/** What bash completes for the words typed so far (the last one being completed). */
function complete(script: string, words: string[]): string[] {
  const line = `${script}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _agentctl; printf '%s\\n' "\${COMPREPLY[@]}"`;
  const r = spawnSync('bash', ['-c', line], { encoding: 'utf8' });
  expect(r.stderr).toBe('');
  return r.stdout.split('\n').filter((w) => w !== '');
}

describe('completion', () => {
  it('bash completes commands, group words, each command\'s flags and profile names; zsh loads the same through bashcompinit', async () => {
    const [bash, zsh, fish] = await Promise.all([run('completion', 'bash'), run('completion', 'zsh'), run('completion', 'fish')]);
    expect(bash.code).toBe(0);
    expect(complete(bash.stdout, ['agentctl', 'cl'])).toEqual(['cluster']);
    expect(complete(bash.stdout, ['agentctl', 'pro'])).toEqual(['profile']);
    expect(complete(bash.stdout, ['agentctl', 'agents', ''])).toEqual(['list', 'show', 'create', 'update', 'delete', 'rename']);
    expect(complete(bash.stdout, ['agentctl', '--profile', 'x', 'stream', 'a', '--s'])).toEqual(['--sender', '--socket']);
    expect(complete(bash.stdout, ['agentctl', 'mcps', 'add', '--e'])).toEqual(['--env', '--eager']);
    expect(complete(bash.stdout, ['agentctl', 'help', 'compl'])).toEqual(['completion']);
    const withProfiles = `agentctl() { printf 'NAME  CONNECTS TO\\nprod  tcp h:1\\nprobe  home /x\\n'; }\n${bash.stdout}`;
    expect(complete(withProfiles, ['agentctl', '--profile', 'pro'])).toEqual(['prod', 'probe']);
    expect(zsh.code).toBe(0);
    expect(zsh.stdout).toMatch(/^#compdef agentctl\n/);
    expect(zsh.stdout).toContain('bashcompinit');
    expect(zsh.stdout).toContain('complete -o default -F _agentctl agentctl');
    expect(fish).toMatchObject({ code: 2, stderr: 'agentctl: completion takes bash or zsh, got "fish"\n' });
  });
});
