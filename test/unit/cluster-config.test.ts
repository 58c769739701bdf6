import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/shared/config-checks.ts';
import { validateClusterSettings } from '../../src/shared/cluster-settings.ts';
import type { StoreLocation } from '../../src/shared/store-location.ts';

const pg: StoreLocation = { kind: 'postgres', url: 'postgres://agentd:s3cret@db.example:5432/agentd' };
const sqlite: StoreLocation = { kind: 'sqlite', path: '/home/u/.agentd/agentd.db' };

describe('cluster settings', () => {
  it('fills in the default name, partitions and lease, and reads several NATS URLs', () => {
    expect(validateClusterSettings({ nats: 'nats://127.0.0.1:4222', node: 'a' }, 'agentd.json', pg)).toEqual({
      name: 'agentd_cluster',
      nats: ['nats://127.0.0.1:4222'],
      node: 'a',
      partitions: 256,
      lease_ms: 5_000,
    });
    expect(validateClusterSettings({ name: 'staging', nats: 'nats://n1:4222, tls://n2:4222', node: 'node_2-b', partitions: 64, lease_ms: 2_000 }, 'f', pg)).toEqual({
      name: 'staging',
      nats: ['nats://n1:4222', 'tls://n2:4222'],
      node: 'node_2-b',
      partitions: 64,
      lease_ms: 2_000,
    });
  });

  it('refuses each bad field, naming it', () => {
    const cases: [unknown, RegExp][] = [
      ['nats://x', /agentd\.json: cluster must be an object/],
      [{ nats: 'nats://x:4222', node: 'a', shards: 4 }, /cluster\.shards is not a known option \(known: name, nats, node, partitions, lease_ms\)/],
      [{ nats: 'nats://x:4222', node: 'a', name: 'a.b' }, /cluster\.name must be 1-64 of letters, digits, "-" and "_", got "a\.b"/],
      [{ node: 'a' }, /cluster\.nats must be a non-empty string/],
      [{ nats: 'http://x:4222', node: 'a' }, /cluster\.nats must be nats:\/\/HOST:PORT .*got "http:\/\/x:4222"/],
      [{ nats: 'nats://x:4222,', node: 'a' }, /cluster\.nats must be nats:\/\/HOST:PORT .*got ""/],
      [{ nats: 'nats://x:4222' }, /cluster\.node must be a non-empty string/],
      [{ nats: 'nats://x:4222', node: 'a.b' }, /cluster\.node must be 1-64 of letters, digits, "-" and "_", got "a\.b"/],
      [{ nats: 'nats://x:4222', node: 'a', partitions: 0 }, /cluster\.partitions must be an integer >= 1/],
      [{ nats: 'nats://x:4222', node: 'a', partitions: 1e6 }, /cluster\.partitions must be an integer >= 1 and <= 65536/],
      [{ nats: 'nats://x:4222', node: 'a', lease_ms: 100 }, /cluster\.lease_ms must be an integer >= 500/],
    ];
    for (const [raw, message] of cases) {
      expect(() => validateClusterSettings(raw, 'agentd.json', pg), JSON.stringify(raw)).toThrow(ConfigError);
      expect(() => validateClusterSettings(raw, 'agentd.json', pg), JSON.stringify(raw)).toThrow(message);
    }
  });

  it('refuses a cluster without a PostgreSQL store, saying why', () => {
    expect(() => validateClusterSettings({ nats: 'nats://127.0.0.1:4222', node: 'a' }, '--cluster', sqlite)).toThrow(
      '--cluster: cluster needs a PostgreSQL store that every node shares ("store": "postgres://…" or --store), not the SQLite file /home/u/.agentd/agentd.db',
    );
  });
});
