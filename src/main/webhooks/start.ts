/** The webhook hub as the daemon builds it: on its store, one node or one of a cluster. */
import type { ResolvedConfig } from '../../shared/config.ts';
import type { Logger } from '../../shared/log.ts';
import type { StoragePool } from '../hosts/storage-pool.ts';
import { WebhookHub } from './webhook-hub.ts';
import { storedWebhooks } from './webhook-store.ts';

const CLUSTER_RELOAD_MS = 1_000;

export function startWebhooks(config: ResolvedConfig, storage: StoragePool | null, log: Logger, wantEvents: (want: boolean) => void): WebhookHub {
  return new WebhookHub({
    store: storage === null ? null : storedWebhooks(storage),
    log,
    node: config.cluster?.node ?? 'local',
    maxWebhooks: config.maxWebhooks,
    maxOutbox: config.maxWebhookOutbox,
    backoffMs: config.webhookBackoffMs,
    timeoutMs: config.webhookTimeoutMs,
    reloadMs: config.cluster === null ? null : CLUSTER_RELOAD_MS,
    wantEvents,
  });
}
