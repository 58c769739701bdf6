/**
 * The client's schedule and outbound webhook methods (PROTOCOL §4.11, §4.12),
 * kept beside the class (client.ts adds them to AgentdClient's prototype) so
 * each file stays one area long.
 */
import type * as W from '../shared/wire/ops.ts';
import type { ArgsOf, OperationName, ReplyOf } from '../shared/wire/ops.ts';

/** What these methods use of the client. */
interface Caller {
  call<Op extends OperationName>(op: Op, args: ArgsOf<Op>): Promise<ReplyOf<Op>>;
}

export interface ScheduleMethods {
  /** Adds a schedule: exactly one of `cron`, `every_ms`, `at`. */
  createSchedule(args: W.CreateScheduleArgs): Promise<W.ScheduleInfo>;
  schedules(): Promise<W.ScheduleInfo[]>;
  deleteSchedule(name: string): Promise<void>;
  /** Adds a webhook; its secret is sent once and never shown again. */
  createWebhook(args: W.CreateWebhookArgs): Promise<W.WebhookInfo>;
  webhooks(): Promise<W.WebhookInfo[]>;
  deleteWebhook(name: string): Promise<void>;
  /** A webhook's deliveries, newest first (optionally only those with `status`). */
  webhookDeliveries(name: string, opts?: { status?: W.WebhookDeliveryStatus; limit?: number }): Promise<W.WebhookDelivery[]>;
}

export const scheduleMethods: ScheduleMethods & ThisType<Caller> = {
  createSchedule(args) {
    return this.call('create_schedule', args);
  },
  async schedules() {
    return (await this.call('list_schedules', {})).schedules;
  },
  async deleteSchedule(name) {
    await this.call('delete_schedule', { name });
  },
  createWebhook(args) {
    return this.call('create_webhook', args);
  },
  async webhooks() {
    return (await this.call('list_webhooks', {})).webhooks;
  },
  async deleteWebhook(name) {
    await this.call('delete_webhook', { name });
  },
  async webhookDeliveries(name, opts = {}) {
    return (await this.call('webhook_deliveries', { name, ...opts })).deliveries;
  },
};
