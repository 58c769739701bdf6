/**
 * A shard thread's workerData: the port its ShardInit (shard-messages.ts)
 * comes on. The thread starts, and loads its modules, while main is still
 * opening the store; its init follows once the rest of the daemon is known.
 */
import type { MessagePort } from 'node:worker_threads';

export interface ShardBoot {
  initPort: MessagePort;
}
