/**
 * Database work that main asks for (conversation lists, session search, and
 * the subscription table's writes) runs on a small piscina pool, so main
 * never blocks on the database. This is a plain task pool, the job piscina is
 * built for: any idle thread takes the next task, each with its own
 * connection; writes take the shards' write lock like any other writer.
 */
import { Piscina } from 'piscina';
import { fileURLToPath } from 'node:url';
import type { StorageTask } from '../shared/threads.ts';

function taskScript(): string {
  return fileURLToPath(
    import.meta.url.endsWith('.ts')
      ? new URL('../worker/storage-tasks-bootstrap.mjs', import.meta.url)
      : new URL('../worker/storage-tasks.js', import.meta.url),
  );
}

export class StoragePool {
  readonly #pool: Piscina;
  readonly dbPath: string;
  readonly writeLock: SharedArrayBuffer;

  constructor(threads: number, dbPath: string, writeLock: SharedArrayBuffer) {
    this.dbPath = dbPath;
    this.writeLock = writeLock;
    this.#pool = new Piscina({
      filename: taskScript(),
      minThreads: threads,
      maxThreads: threads,
      idleTimeout: Infinity,
      workerData: { dbPath, writeLock },
    });
  }

  run<T = unknown>(task: StorageTask): Promise<T> {
    return this.#pool.run(task) as Promise<T>;
  }

  async close(): Promise<void> {
    await this.#pool.destroy();
  }
}
