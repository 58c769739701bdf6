/**
 * A shard's side of the turn writer thread (group-commit.ts): posts a batch
 * of turns on the shard's port and resolves with the writer's per-turn
 * results. If the writer is lost (it crashed, or main replaced it for
 * hanging), the port closes and every batch still waiting is rejected with
 * WriterLostError; main then hands the shard a port to the replacement
 * (`attach`). Until it does, a batch is refused at once with the same error.
 */
import type { MessagePort } from 'node:worker_threads';
import type { CommitReply, CommitRequest, CommitResult } from './messages.ts';
import type { TurnRecord } from '../../storage/contract.ts';

/** The writer was lost before it answered: whether the batch was committed is for the caller to find out. */
export class WriterLostError extends Error {}

interface Link {
  port: MessagePort;
  pending: Map<number, { resolve(results: CommitResult[]): void; reject(err: Error): void }>;
  open: boolean;
}

export class WriterClient {
  #link: Link | null = null;
  #nextId = 1;

  constructor(port: MessagePort) {
    this.attach(port);
  }

  /** Switches to a new writer's port; what waited on the old one is rejected (that writer is gone). */
  attach(port: MessagePort): void {
    const link: Link = { port, pending: new Map(), open: true };
    port.on('message', (reply: CommitReply) => {
      const p = link.pending.get(reply.id);
      link.pending.delete(reply.id);
      p?.resolve(reply.results);
    });
    port.on('close', () => this.#lost(link, 'the turn writer thread stopped before it answered'));
    const old = this.#link;
    this.#link = link;
    if (old !== null) {
      old.port.close();
      this.#lost(old, 'the turn writer thread was replaced before it answered');
    }
  }

  #lost(link: Link, why: string): void {
    if (!link.open) return;
    link.open = false;
    if (this.#link === link) this.#link = null;
    const err = new WriterLostError(why);
    for (const p of link.pending.values()) p.reject(err);
    link.pending.clear();
  }

  commit(turns: TurnRecord[]): Promise<CommitResult[]> {
    const link = this.#link;
    if (link === null) return Promise.reject(new WriterLostError('the turn writer thread is being replaced'));
    return new Promise((resolve, reject) => {
      const id = this.#nextId++;
      link.pending.set(id, { resolve, reject });
      link.port.postMessage({ id, turns } satisfies CommitRequest);
    });
  }

  close(): void {
    const link = this.#link;
    if (link === null) return;
    link.port.close();
    this.#lost(link, 'the shard closed its store');
  }
}
