/** The schedule engine as the daemon builds it: on its store, publishing on its bus, as one node or one of a cluster. */
import type { ResolvedConfig } from '../../shared/config.ts';
import type { Logger } from '../../shared/log.ts';
import type { EventBus } from '../bus/event-bus.ts';
import type { StoragePool } from '../hosts/storage-pool.ts';
import { ScheduleEngine } from './schedule-engine.ts';
import { MemorySchedules, storedSchedules } from './schedule-store.ts';

/** A single node's claims never meet another's; this only bounds a claim left by a crash mid-fire. */
const SINGLE_NODE_LEASE_MS = 5_000;
/** Cluster mode: how often each node reads the table for schedules other nodes changed. */
const CLUSTER_RELOAD_MS = 1_000;
/** Test only: a node that freshly claims a tick of a schedule whose name starts with this kills itself (docs/configuration.md, "Test only"). */
const CLAIM_KILL_ENV = 'AGENTD_TEST_SCHEDULE_CLAIM_KILL';

/** The test hook: SIGKILL on a fresh claim (not a takeover of a lapsed one, which comes a lease after the due time). */
function claimKill(log: Logger, leaseMs: number): ((name: string, due: number) => void) | undefined {
  const prefix = process.env[CLAIM_KILL_ENV];
  if (prefix === undefined || prefix === '') return undefined;
  log.warn(`${CLAIM_KILL_ENV} is set: a node claiming a tick of a "${prefix}..." schedule kills itself (tests only)`);
  return (name, due) => {
    if (name.startsWith(prefix) && Date.now() < due + leaseMs) process.kill(process.pid, 'SIGKILL');
  };
}

/** Test only: a node that has published a fresh tick of a schedule whose name starts with this kills itself before recording it. */
const PUBLISHED_KILL_ENV = 'AGENTD_TEST_SCHEDULE_PUBLISHED_KILL';
/** How long that node lets the turns it fired run (so they are stored) before it dies. */
const PUBLISHED_KILL_AFTER_MS = 1_500;

/** The test hook: SIGKILL between a fresh tick's publish and its record, once its fired turns had time to be stored. */
function publishedKill(log: Logger, leaseMs: number): ((name: string, due: number) => Promise<void>) | undefined {
  const prefix = process.env[PUBLISHED_KILL_ENV];
  if (prefix === undefined || prefix === '') return undefined;
  log.warn(`${PUBLISHED_KILL_ENV} is set: a node publishing a tick of a "${prefix}..." schedule kills itself before recording it (tests only)`);
  return async (name, due) => {
    if (!name.startsWith(prefix) || Date.now() >= due + leaseMs) return;
    await new Promise((resolve) => setTimeout(resolve, PUBLISHED_KILL_AFTER_MS));
    process.kill(process.pid, 'SIGKILL');
  };
}

export function startSchedules(config: ResolvedConfig, storage: StoragePool | null, bus: EventBus, log: Logger): ScheduleEngine {
  const cluster = config.cluster;
  return new ScheduleEngine({
    store: storage === null ? new MemorySchedules() : storedSchedules(storage),
    publish: (source, payload, key) => bus.publish(source, payload, 0, 0, key),
    log,
    node: cluster?.node ?? 'local',
    leaseMs: cluster?.lease_ms ?? SINGLE_NODE_LEASE_MS,
    reloadMs: cluster === null ? null : CLUSTER_RELOAD_MS,
    // In a cluster, a tick less than a lease overdue may be one a live node is about to fire.
    missedAfterMs: cluster?.lease_ms ?? 0,
    maxSchedules: config.maxSchedules,
    claimed: claimKill(log, cluster?.lease_ms ?? SINGLE_NODE_LEASE_MS),
    published: publishedKill(log, cluster?.lease_ms ?? SINGLE_NODE_LEASE_MS),
  });
}
