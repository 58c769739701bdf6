/**
 * A shard's side of the turn writer thread (group-commit.ts): posts a batch
 * of turns on the shard's port and resolves with the writer's per-turn
 * results. If the writer is lost (it crashed, or main replaced it for
 * hanging), the port closes and every batch still waiting is rejected with
 * WriterLostError; main then hands the shard a port to the replacement
 * (`attach`). Until it does, a batch is refused at once with the same error.
 *
 * PortRpc, not comlink: every turn's commit goes this way (the per-turn
 * path), where comlink's envelope and proxy machinery would be paid per turn.
 */
import type { MessagePort } from 'node:worker_threads';
import type { CommitReply, CommitRequest, CommitResult } from './messages.ts';
import type { TurnRecord } from '../../storage/contract.ts';
import { PortRpc } from '../../shared/threads/port-rpc.ts';

/** The writer was lost before it answered: whether the batch was committed is for the caller to find out. */
export class WriterLostError extends Error {}

type Link = PortRpc<Omit<CommitRequest, 'id'>, CommitReply>;

export class WriterClient {
  #link: Link | null = null;

  constructor(port: MessagePort) {
    this.attach(port);
  }

  /** Switches to a new writer's port; what waited on the old one is rejected (that writer is gone). */
  attach(port: MessagePort): void {
    const link: Link = new PortRpc(port, () => new WriterLostError('the turn writer thread stopped before it answered'));
    port.on('close', () => {
      if (this.#link === link) this.#link = null;
    });
    const old = this.#link;
    this.#link = link;
    old?.close(new WriterLostError('the turn writer thread was replaced before it answered'));
  }

  async commit(turns: TurnRecord[]): Promise<CommitResult[]> {
    const link = this.#link;
    if (link === null) throw new WriterLostError('the turn writer thread is being replaced');
    return (await link.request({ turns })).results;
  }

  close(): void {
    const link = this.#link;
    if (link === null) return;
    this.#link = null;
    link.close(new WriterLostError('the shard closed its store'));
  }
}
