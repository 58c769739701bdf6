/**
 * Starting and stopping one shard's worker thread: its resource limits, the
 * ports it takes with it, and the shutdown handshake that lets it close its
 * store before it is terminated.
 */
import { MessageChannel, Worker } from 'node:worker_threads';
import { workerScript } from './worker-script.ts';
import type { FromShard, ShardInit, StopRequest } from '../../shared/threads/shard-messages.ts';
import type { ShardBoot } from '../../shared/threads/shard-boot.ts';

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

/**
 * A shard thread started before its init is known (ShardBoot): its modules
 * load, a good part of a daemon's start-up, while main opens the store.
 */
export interface PendingShard {
  readonly worker: Worker;
  /** The thread's exit code if it exited before `start` (failing to load, say). */
  readonly exited: number | null;
  /** Hands the thread its init (the ports in it move to the thread); it then starts and says `ready`. */
  start(init: ShardInit): void;
}

/** Starts a shard thread that waits for its init; `onEarlyError` hears what it throws before `start`. */
export function prestartShard(onEarlyError: (err: Error) => void): PendingShard {
  const { port1, port2 } = new MessageChannel();
  const worker = new Worker(workerScript('shard'), {
    workerData: { initPort: port2 } satisfies ShardBoot,
    transferList: [port2],
    resourceLimits: { maxYoungGenerationSizeMb: SHARD_YOUNG_GENERATION_MB },
  });
  let exited: number | null = null;
  const onExit = (code: number): void => void (exited = code);
  worker.on('error', onEarlyError);
  worker.once('exit', onExit);
  // Until it starts, a daemon that fails to start does not wait for it.
  worker.unref();
  return {
    worker,
    get exited() {
      return exited;
    },
    start(init) {
      worker.off('error', onEarlyError);
      worker.off('exit', onExit);
      worker.ref();
      port1.postMessage(init, init.writerPort === null ? [init.harnessPort, init.mcpPort] : [init.harnessPort, init.mcpPort, init.writerPort]);
    },
  };
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
