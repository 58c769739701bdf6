import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveHarnessModule, resolveHarnessModuleSync } from '../../src/shared/harness-module.ts';

describe('harness module names', () => {
  const home = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-hm-')));
  const dir = join(home, 'harness');
  const bare = mkdtempSync(join(tmpdir(), 'agentd-hm-'));
  afterAll(() => {
    rmSync(home, { recursive: true, force: true });
    rmSync(bare, { recursive: true, force: true });
  });
  mkdirSync(dir);
  writeFileSync(join(dir, 'both.mjs'), '');
  writeFileSync(join(dir, 'both.js'), '');
  writeFileSync(join(dir, 'plain.js'), '');
  mkdirSync(join(dir, 'folder.mjs'));
  writeFileSync(join(home, 'outside.mjs'), '');
  symlinkSync(join(home, 'outside.mjs'), join(dir, 'escape.mjs'));
  writeFileSync(join(dir, 'target.mjs'), '');
  symlinkSync(join(dir, 'target.mjs'), join(dir, 'alias.mjs'));

  const found: [string, string][] = [
    ['both', 'both.mjs'],
    ['plain', 'plain.js'],
    ['both.js', 'both.js'],
    ['alias', 'target.mjs'],
  ];
  const refused: [string, RegExp][] = [
    ['/etc/passwd', /must name a module/],
    ['../outside', /must name a module/],
    ['a/b', /must name a module/],
    ['.hidden', /must name a module/],
    ['escape', /resolves to .*outside\.mjs, outside/],
    ['folder', /is not in/],
    ['nothing', /is not in .* \(looked for nothing\.mjs, nothing\.js\)/],
  ];

  it('resolves a name to the real file inside the folder, the same way with and without blocking', async () => {
    for (const [name, file] of found) {
      expect(await resolveHarnessModule(home, name), name).toBe(join(dir, file));
      expect(resolveHarnessModuleSync(home, name), name).toBe(join(dir, file));
    }
  });

  it('refuses paths, escapes, folders and missing modules, the same way with and without blocking', async () => {
    for (const [name, why] of refused) {
      await expect(resolveHarnessModule(home, name), name).rejects.toThrow(why);
      expect(() => resolveHarnessModuleSync(home, name), name).toThrow(why);
    }
  });

  it('refuses every name when the home has no harness folder', async () => {
    await expect(resolveHarnessModule(bare, 'both')).rejects.toThrow(/is not in/);
    expect(() => resolveHarnessModuleSync(bare, 'both')).toThrow(/is not in/);
  });
});
