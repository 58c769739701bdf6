/**
 * Starting and stopping one shard's worker thread: its resource limits, the
 * ports it takes with it, and the shutdown handshake that lets it close its
 * store before it is terminated.
 */
import { Worker } from 'node:worker_threads';
import { workerScript } from './worker-script.ts';
import type { FromShard, ShardInit, StopRequest } from '../../shared/threads/shard-messages.ts';

/**
 * A shard's young generation (V8's default grows to 48 MiB per thread). A
 * long streamed answer churns millions of short strings, and the default let
 * each shard's young space grow to its maximum and stay there: measured on a
 * 16 MiB echo stream, peak resident growth fell from 12.4x the request to
 * about 9-10x with 12 MiB.
 */
const SHARD_YOUNG_GENERATION_MB = 12;

/** How long a shard may take to close its store at shutdown before it is terminated anyway. */
const STOP_TIMEOUT_MS = 5_000;

/** Starts a shard thread with `init`; the ports in it move to the thread. */
export function startShard(init: ShardInit): Worker {
  return new Worker(workerScript('shard'), {
    workerData: init,
    transferList: init.writerPort === null ? [init.harnessPort, init.mcpPort] : [init.harnessPort, init.mcpPort, init.writerPort],
    resourceLimits: { maxYoungGenerationSizeMb: SHARD_YOUNG_GENERATION_MB },
  });
}

/** Asks a shard to close its store, and terminates it once it has, or has exited, or after STOP_TIMEOUT_MS. */
export async function stopShard(worker: Worker): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const stopped = new Promise<void>((resolve) => {
    worker.on('message', (msg: FromShard) => msg.type === 'stopped' && resolve());
    worker.once('exit', () => resolve());
    timer = setTimeout(resolve, STOP_TIMEOUT_MS);
  });
  worker.postMessage({ type: 'stop' } satisfies StopRequest);
  await stopped;
  clearTimeout(timer);
  await worker.terminate();
}
