/**
 * What the store holds of outbound webhooks and their outbox, and the calls
 * main makes on them (each backend answers them in its own webhooks.ts).
 * Times are epoch milliseconds. A delivery is written before its first
 * attempt; a delivery loop claims due ones for a while (`claim_until`), so a
 * node that dies mid-attempt leaves them to another. Only the oldest pending
 * delivery of a (webhook, conversation) is ever due, so each conversation's
 * deliveries go out in order.
 */
import type { WebhookDeliveryStatus } from '../shared/wire/webhooks.ts';

export interface WebhookRecord {
  name: string;
  url: string;
  /** JSON list of event kinds. */
  events: string;
  /** JSON list of agent names, or null for every agent. */
  agents: string | null;
  secret: string;
  max_attempts: number;
  created_at: number;
}

export interface NewDelivery {
  id: string;
  webhook: string;
  /** The conversation (agent and sender), the unit of ordering. */
  conv: string;
  kind: string;
  agent: string;
  sender: string;
  /** The JSON body every attempt posts. */
  body: string;
  created_at: number;
}

export interface DeliveryRecord extends NewDelivery {
  seq: number;
  status: WebhookDeliveryStatus;
  attempts: number;
  last_error: string;
  next_attempt_at: number | null;
  finished_at: number | null;
}

/** What one attempt made of a claimed delivery. */
export interface AttemptResult {
  status: WebhookDeliveryStatus;
  attempts: number;
  last_error: string;
  next_attempt_at: number | null;
  finished_at: number | null;
}

export type WebhookCall =
  | { call: 'insert'; record: WebhookRecord; max: number }
  /** Deletes the webhook and its deliveries. */
  | { call: 'delete'; name: string }
  | { call: 'list' }
  /** Stores deliveries while fewer than `max` are pending; answers how many it stored (the first ones). */
  | { call: 'enqueue'; deliveries: NewDelivery[]; max: number }
  /** Claims up to `limit` due deliveries, each the oldest pending of its (webhook, conversation), until `until`. */
  | { call: 'claim_due'; now: number; until: number; node: string; limit: number }
  /** Records an attempt's outcome, if `node` still holds the claim. */
  | { call: 'attempted'; id: string; node: string; result: AttemptResult }
  /** A node starting again lets go of the claims it held before it stopped. */
  | { call: 'release'; node: string }
  /** Newest first, without bodies. */
  | { call: 'deliveries'; webhook: string; status: WebhookDeliveryStatus | null; limit: number }
  /** Keeps the newest `keep` finished deliveries of each webhook. */
  | { call: 'prune'; keep: number };
