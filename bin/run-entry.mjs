// Picks how a command runs: the compiled JS in dist/ when the package is
// installed and built, else the TypeScript source through tsx. A git checkout
// (npm link, `npm install -g .`) always runs its source, so a stale dist/ left
// by an old build never shadows edited code.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Imports the entry `name` (`agentd` or `agentctl`) of src/cli. */
export async function runEntry(name) {
  const built = `${ROOT}dist/src/cli/${name}.js`;
  if (!existsSync(`${ROOT}.git`) && existsSync(built)) {
    await import(pathToFileURL(built).href);
    return;
  }
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(`${ROOT}src/cli/${name}.ts`).href);
}
