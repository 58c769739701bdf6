/**
 * The file a worker thread starts from. Node 20 cannot load .ts in a worker,
 * so from source (tests, dev) a worker starts at `<name>-bootstrap.mjs`, which
 * registers tsx and imports `<name>.ts`; built, `<name>.js` loads directly.
 */
import { fileURLToPath } from 'node:url';

const FROM_SOURCE = import.meta.url.endsWith('.ts');

/** Each thread's entry, from this folder, without its extension. */
const ENTRIES = {
  shard: '../../shard/shard',
  'storage-tasks': '../../threads/storage/storage-tasks',
  'mcp-thread': '../../threads/mcp/mcp-thread',
  'writer-thread': '../../threads/writer/writer-thread',
} as const;

export function workerScript(name: keyof typeof ENTRIES): string {
  const file = FROM_SOURCE ? `${ENTRIES[name]}-bootstrap.mjs` : `${ENTRIES[name]}.js`;
  return fileURLToPath(new URL(file, import.meta.url));
}
