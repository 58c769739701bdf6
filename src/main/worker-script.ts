/**
 * The file a worker thread starts from. Node 20 cannot load .ts in a worker,
 * so from source (tests, dev) a worker starts at `<name>-bootstrap.mjs`, which
 * registers tsx and imports `<name>.ts`; built, `<name>.js` loads directly.
 */
import { fileURLToPath } from 'node:url';

const FROM_SOURCE = import.meta.url.endsWith('.ts');

export function workerScript(name: 'shard' | 'storage-tasks' | 'mcp-thread' | 'writer-thread'): string {
  const file = FROM_SOURCE ? `../worker/${name}-bootstrap.mjs` : `../worker/${name}.js`;
  return fileURLToPath(new URL(file, import.meta.url));
}
