/** The wire contract of outbound webhooks (PROTOCOL §4.12): the outside world as a sink of agent events. */
import type { Empty } from './common.ts';

export type WebhookDeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface CreateWebhookArgs {
  name: string;
  url: string;
  events: string[];
  agents?: string[];
  secret: string;
  max_attempts?: number;
}

/** A webhook as listed: never its secret. */
export interface WebhookInfo {
  name: string;
  url: string;
  events: string[];
  /** null: every agent. */
  agents: string[] | null;
  max_attempts: number;
  created_at: string;
  /** Events not stored because the outbox was full, since this node started. */
  dropped: number;
}

export interface WebhookDelivery {
  id: string;
  webhook: string;
  kind: string;
  agent: string;
  sender: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  /** Why the last attempt failed (an HTTP status and reason, a timeout, a connection error); "" if none did. */
  last_error: string;
  created_at: string;
  /** When the next attempt is due (pending only). */
  next_attempt_at: string | null;
  /** When it was delivered or given up on. */
  finished_at: string | null;
}

export interface WebhookOperations {
  create_webhook: { args: CreateWebhookArgs; variant: 'webhook'; reply: WebhookInfo };
  list_webhooks: { args: Empty; variant: 'webhook_list'; reply: { webhooks: WebhookInfo[] } };
  delete_webhook: { args: { name: string }; variant: 'pong'; reply: Empty };
  webhook_deliveries: { args: { name: string; status?: WebhookDeliveryStatus; limit?: number }; variant: 'webhook_deliveries'; reply: { deliveries: WebhookDelivery[] } };
}
