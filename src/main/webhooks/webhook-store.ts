/** Where webhooks and their outbox live: the daemon's store, through the storage threads (storage/webhook-calls.ts). */
import type { StoragePool } from '../hosts/storage-pool.ts';
import type { WebhookCall } from '../../storage/webhook-calls.ts';

export interface WebhookStore {
  call<T>(c: WebhookCall): Promise<T>;
}

export function storedWebhooks(storage: StoragePool): WebhookStore {
  return { call: <T>(c: WebhookCall) => storage.run<T>({ op: 'webhooks', call: c }) };
}
