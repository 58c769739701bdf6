// Picks how a command runs: the compiled JS in dist/ when it is there and,
// in a git checkout, compiled from the current source (so a stale dist/ never
// shadows edited code); else the TypeScript source through tsx, a dev
// dependency that `npm ci` in a checkout installs. Starting from dist/ takes
// a fraction of the time tsx needs to compile the source.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { staleSource } from './dist-freshness.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function useBuilt(built) {
  if (!existsSync(built)) return false;
  return !existsSync(`${ROOT}.git`) || staleSource(ROOT) === null;
}

/** Imports the entry `name` (`agentd` or `agentctl`) of src/cli. */
export async function runEntry(name) {
  const built = `${ROOT}dist/src/cli/${name}.js`;
  if (useBuilt(built)) {
    await import(pathToFileURL(built).href);
    return;
  }
  let register;
  try {
    ({ register } = await import('tsx/esm/api'));
  } catch {
    process.stderr.write(`${name}: dist/ is missing or older than src/, and tsx (a dev dependency) is not installed: run \`npm run build\` (or \`npm ci\`) in ${ROOT}\n`);
    process.exit(70);
  }
  register();
  await import(pathToFileURL(`${ROOT}src/cli/${name}.ts`).href);
}
