/**
 * Run ids name where a run lives: `r<pair hash, 8 hex digits>-<tag>-<n>`.
 * The pair hash (hash.ts) gives the shard (hash % shards) and, in a
 * cluster, the partition (hash % partitions), so main and any cluster node
 * route a run operation without a lookup. `tag` is random per shard start
 * and `n` counts runs from 1, so ids never repeat across restarts.
 */
import { randomBytes } from 'node:crypto';
import { pairHash } from '../hash.ts';

const RUN_ID = /^r([0-9a-f]{8})-[0-9a-z]{1,13}-[0-9a-z]{1,13}$/;

/** Makes the run ids of one shard's life. */
export class RunIds {
  readonly #tag = randomBytes(4).readUInt32BE(0).toString(36);
  #n = 0;

  next(agent: string, sender: string): string {
    return `r${pairHash(agent, sender).toString(16).padStart(8, '0')}-${this.#tag}-${(++this.#n).toString(36)}`;
  }
}

/** The pair hash a run id carries, or null when it is not a run id. */
export function runIdHash(runId: string): number | null {
  const m = RUN_ID.exec(runId);
  return m === null ? null : parseInt(m[1]!, 16);
}
