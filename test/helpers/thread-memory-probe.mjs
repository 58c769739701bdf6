/**
 * Preloaded into a test daemon (`NODE_OPTIONS=--import`, so it runs in main
 * and in every worker thread): with $AGENTD_TEST_MEMORY_PROBE naming a
 * directory, each thread, while <dir>/measure exists (the test creates it
 * once the daemon is up, so start-up is not slowed), collects its garbage (a
 * full GC) and writes its V8 heap in use and its external memory
 * (ArrayBuffers, shared ones included) to <dir>/<thread>.json, every
 * PROBE_MS. Tests sum the threads to see memory held, not memory the
 * allocator kept. Does nothing without the variable.
 */
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { isMainThread, threadId } from 'node:worker_threads';

const PROBE_MS = 200;
const dir = process.env.AGENTD_TEST_MEMORY_PROBE;
if (dir) {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc');
  const file = join(dir, `${isMainThread ? 'main' : `thread-${threadId}`}.json`);
  let seq = 0;
  const measuring = join(dir, 'measure');
  setInterval(() => {
    if (!existsSync(measuring)) return;
    gc();
    const { heapUsed, external } = process.memoryUsage();
    // Write then rename: the reader never sees half a file.
    writeFileSync(`${file}.tmp`, JSON.stringify({ seq: ++seq, heapUsed, external }));
    renameSync(`${file}.tmp`, file);
  }, PROBE_MS).unref();
}
