/**
 * Preloaded into the daemon by the soak run (`node --import`): writes the main
 * thread's memory figures to $AGENTD_SOAK_PROBE once a second, so the soak can
 * follow the heap from outside. Does nothing without that variable.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

const path = process.env.AGENTD_SOAK_PROBE;
if (path && isMainThread) {
  setInterval(() => {
    const { heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
    // Write then rename: the reader never sees half a file.
    writeFileSync(`${path}.tmp`, JSON.stringify({ heapUsed, heapTotal, external, arrayBuffers }));
    renameSync(`${path}.tmp`, path);
  }, 1_000).unref();
}
