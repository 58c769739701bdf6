/**
 * Read-only queries of stored data (conversation lists, session search) run
 * on a small piscina pool, so main never blocks on the database. This is a
 * plain task pool, the job piscina is built for: any idle reader takes the
 * next query, each has its own read-only connection.
 */
import { Piscina } from 'piscina';
import { fileURLToPath } from 'node:url';
import type { ReaderTask } from '../shared/threads.ts';

function readerScript(): string {
  return fileURLToPath(
    import.meta.url.endsWith('.ts') ? new URL('../worker/reader-bootstrap.mjs', import.meta.url) : new URL('../worker/reader.js', import.meta.url),
  );
}

export class ReaderPool {
  readonly #pool: Piscina;

  constructor(threads: number) {
    this.#pool = new Piscina({
      filename: readerScript(),
      minThreads: threads,
      maxThreads: threads,
      idleTimeout: Infinity,
    });
  }

  run(task: ReaderTask): Promise<unknown> {
    return this.#pool.run(task) as Promise<unknown>;
  }

  async close(): Promise<void> {
    await this.#pool.destroy();
  }
}
