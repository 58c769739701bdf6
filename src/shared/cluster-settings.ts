/**
 * A node's cluster settings: `cluster` in agentd.json, or `--cluster URL
 * --node NAME`, validated against the store the node uses.
 */
import { boundedInt, ConfigError, onlyKeys, string } from './config-checks.ts';
import { isPlainMap } from './args.ts';
import { DEFAULT_PARTITIONS, NODE_NAME } from './partitions.ts';
import { withoutPassword } from './redact.ts';
import type { StoreLocation } from './store-location.ts';
import type { ClusterSettings } from './config.ts';

const CLUSTER_KEYS = ['name', 'nats', 'node', 'partitions', 'lease_ms'];
export const DEFAULT_CLUSTER_NAME = 'agentd_cluster';
export const DEFAULT_LEASE_MS = 5_000;
const MAX_PARTITIONS = 65_536;
const LEASE_MS_RANGE = [500, 600_000] as const;

/**
 * Validates `cluster: {nats, node, partitions, lease_ms}` against the store
 * the node uses: the nodes of a cluster share their conversations through
 * PostgreSQL, so any other store is refused, saying so.
 */
export function validateClusterSettings(raw: unknown, source: string, store: StoreLocation): ClusterSettings {
  if (!isPlainMap(raw)) throw new ConfigError(source, 'cluster', 'must be an object {nats, node, name, partitions, lease_ms}');
  onlyKeys(raw, CLUSTER_KEYS, source, 'cluster');
  const name = raw.name === undefined ? DEFAULT_CLUSTER_NAME : string(raw.name, source, 'cluster.name', false);
  if (!NODE_NAME.test(name)) throw new ConfigError(source, 'cluster.name', `must be 1-64 of letters, digits, "-" and "_", got ${JSON.stringify(name)}`);
  const nats = string(raw.nats, source, 'cluster.nats', false)
    .split(',')
    .map((u) => u.trim());
  for (const u of nats) {
    let url: URL | null = null;
    try {
      url = new URL(u);
    } catch {
      // reported below
    }
    if (url === null || (url.protocol !== 'nats:' && url.protocol !== 'tls:') || url.hostname === '') {
      throw new ConfigError(source, 'cluster.nats', `must be nats://HOST:PORT (or tls://), several separated by commas; got ${JSON.stringify(withoutPassword(u))}`);
    }
  }
  const node = string(raw.node, source, 'cluster.node', false);
  if (!NODE_NAME.test(node)) throw new ConfigError(source, 'cluster.node', `must be 1-64 of letters, digits, "-" and "_", got ${JSON.stringify(node)}`);
  const partitions = raw.partitions === undefined ? DEFAULT_PARTITIONS : boundedInt(raw.partitions, source, 'cluster.partitions', 1, MAX_PARTITIONS);
  const lease_ms = raw.lease_ms === undefined ? DEFAULT_LEASE_MS : boundedInt(raw.lease_ms, source, 'cluster.lease_ms', ...LEASE_MS_RANGE);
  if (store.kind !== 'postgres') {
    throw new ConfigError(
      source,
      'cluster',
      `needs a PostgreSQL store that every node shares ("store": "postgres://…" or --store), not the SQLite file ${store.path}`,
    );
  }
  return { name, nats, node, partitions, lease_ms };
}
