/**
 * Cluster test helpers shared by the cluster e2e suites: a node's
 * `get_stats.cluster`, waiting for the spread the nodes compute, and finding
 * a key whose pair a given node owns under that spread.
 */
import type { AgentdClient } from '../../src/client/index.ts';
import { assignPartitions, partitionOf } from '../../src/shared/partitions.ts';
import type { ClusterStats } from '../../src/shared/wire/ops.ts';
import { waitFor } from './daemon.ts';

export async function clusterStats(c: AgentdClient): Promise<ClusterStats> {
  return ((await c.request('get_stats', {})).stats as { cluster: ClusterStats }).cluster;
}

/** Waits until every node sees all of `names` and serves its even share of `partitions`. */
export async function settled(clients: AgentdClient[], names: string[], partitions: number): Promise<void> {
  const share = assignPartitions(partitions, names);
  await waitFor(async () => {
    for (const c of clients) {
      const s = await clusterStats(c);
      if (s.live_nodes.join() !== [...names].sort().join()) return false;
      if (s.served_partitions !== share.filter((n) => n === s.node).length) return false;
    }
    return true;
  }, `partitions spread over ${names.join(', ')}`, 60_000);
}

/** The first `tag-i` whose pair (`agent`, `senderOf(tag-i)`) the spread over `names` gives to `owner`. */
export function keyOwnedBy(owner: string, names: string[], partitions: number, agent: string, tag: string, senderOf: (key: string) => string = (k) => k): string {
  const owners = assignPartitions(partitions, names);
  for (let i = 0; ; i++) {
    const key = `${tag}-${i}`;
    if (owners[partitionOf(agent, senderOf(key), partitions)] === owner) return key;
  }
}
