/**
 * Outbound webhooks as an event sink: the table of webhooks (in the store,
 * held here too), and the intake that turns this node's agent events into
 * deliveries written to the outbox before anything is sent. Events are
 * written in the order they came, so each conversation's deliveries keep
 * their order; past the outbox cap an event is dropped for that webhook,
 * counted and logged.
 */
import { randomUUID } from 'node:crypto';
import { AgentdError, Code } from '../../shared/errors.ts';
import { decodeBody } from '../../shared/codec.ts';
import type { Logger } from '../../shared/log.ts';
import type { AgentEvent } from '../../shared/wire/bus.ts';
import type { WebhookDelivery, WebhookDeliveryStatus, WebhookInfo } from '../../shared/wire/webhooks.ts';
import type { InsertResult } from '../../storage/schedule-calls.ts';
import type { DeliveryRecord, NewDelivery, WebhookRecord } from '../../storage/webhook-calls.ts';
import { tooMany } from '../limits.ts';
import { DeliveryLoop } from './delivery-loop.ts';
import { AGENT_EVENT_OF, deliveryInfo, webhookInfo } from './webhook-spec.ts';
import type { WebhookStore } from './webhook-store.ts';

export interface WebhookHubOptions {
  /** null with persistence off: webhooks are refused. */
  store: WebhookStore | null;
  log: Logger;
  node: string;
  maxWebhooks: number;
  /** Pending deliveries the outbox holds at most (all webhooks together). */
  maxOutbox: number;
  backoffMs: number;
  timeoutMs: number;
  /** Cluster mode: the table is read again this often for webhooks other nodes changed; null on one node. */
  reloadMs: number | null;
  /** The hub began (true) or stopped (false) needing the shards' agent events. */
  wantEvents(want: boolean): void;
}

interface Hook {
  record: WebhookRecord;
  /** Agent event kinds it takes, each with the webhook kind it is delivered as. */
  kinds: Map<string, string>;
  agents: Set<string> | null;
}

function hookOf(record: WebhookRecord): Hook {
  const events = JSON.parse(record.events) as string[];
  const agents = record.agents === null ? null : new Set(JSON.parse(record.agents) as string[]);
  return { record, kinds: new Map(events.map((k) => [AGENT_EVENT_OF[k] ?? k, k])), agents };
}

export class WebhookHub {
  readonly #o: WebhookHubOptions;
  readonly #hooks = new Map<string, Hook>();
  readonly #dropped = new Map<string, number>();
  readonly #loop: DeliveryLoop | null;
  #writes: Promise<void> = Promise.resolve();
  #reloader: NodeJS.Timeout | null = null;
  #wanting = false;

  constructor(opts: WebhookHubOptions) {
    this.#o = opts;
    this.#loop = opts.store === null ? null : new DeliveryLoop({ store: opts.store, node: opts.node, log: opts.log, webhook: (n) => this.#hooks.get(n)?.record, backoffMs: opts.backoffMs, timeoutMs: opts.timeoutMs });
  }

  /** Loads the table, takes back this node's claims from before a restart, and starts delivering. */
  async start(): Promise<void> {
    const store = this.#o.store;
    if (store === null || this.#loop === null) return;
    this.#replace(await store.call<WebhookRecord[]>({ call: 'list' }));
    await store.call({ call: 'release', node: this.#o.node });
    this.#loop.start(Math.min(1_000, Math.max(50, this.#o.backoffMs)));
    if (this.#o.reloadMs !== null) {
      this.#reloader = setInterval(() => {
        store.call<WebhookRecord[]>({ call: 'list' }).then((rows) => this.#replace(rows), (err: unknown) => this.#o.log.warn({ err }, 'reading webhooks from the store failed'));
      }, this.#o.reloadMs);
      this.#reloader.unref();
    }
  }

  stop(): void {
    this.#loop?.stop();
    if (this.#reloader !== null) clearInterval(this.#reloader);
  }

  /** Reads the table again (`rename_agent` changed the agents webhooks filter on). */
  async reload(): Promise<void> {
    if (this.#o.store !== null) this.#replace(await this.#o.store.call<WebhookRecord[]>({ call: 'list' }));
  }

  #replace(rows: readonly WebhookRecord[]): void {
    this.#hooks.clear();
    for (const r of rows) this.#hooks.set(r.name, hookOf(r));
    this.#sayWanting();
  }

  #sayWanting(): void {
    const want = this.#hooks.size > 0;
    if (want === this.#wanting) return;
    this.#wanting = want;
    this.#o.wantEvents(want);
  }

  /** Whether the shards must emit agent events for the webhooks. */
  get wantsEvents(): boolean {
    return this.#wanting;
  }

  #need(): WebhookStore {
    if (this.#o.store === null) throw new AgentdError(Code.BadRequest, 'webhooks need a store: this daemon runs with "persist": false');
    return this.#o.store;
  }

  /** `reload_config`: a new `max_webhooks`, for creates from now on. */
  setMaxWebhooks(max: number): void {
    this.#o.maxWebhooks = max;
  }

  /** 409 when the name is taken, 429 past max_webhooks. */
  async create(r: WebhookRecord): Promise<WebhookInfo> {
    const result = await this.#need().call<InsertResult>({ call: 'insert', record: r, max: this.#o.maxWebhooks });
    if (result === 'exists') throw new AgentdError(Code.Conflict, `webhook "${r.name}" already exists`);
    if (result === 'full') throw tooMany('webhooks', this.#o.maxWebhooks, 'max_webhooks');
    this.#hooks.set(r.name, hookOf(r));
    this.#sayWanting();
    return webhookInfo(r, 0);
  }

  async delete(name: string): Promise<boolean> {
    this.#hooks.delete(name);
    this.#sayWanting();
    return this.#need().call<boolean>({ call: 'delete', name });
  }

  async list(): Promise<WebhookInfo[]> {
    const rows = this.#o.store === null ? [] : await this.#o.store.call<WebhookRecord[]>({ call: 'list' });
    return rows.map((r) => webhookInfo(r, this.#dropped.get(r.name) ?? 0));
  }

  async deliveries(name: string, status: WebhookDeliveryStatus | null, limit: number): Promise<WebhookDelivery[]> {
    const store = this.#need();
    if (!(await store.call<WebhookRecord[]>({ call: 'list' })).some((r) => r.name === name)) throw new AgentdError(Code.NotFound, `no webhook "${name}"`);
    return (await store.call<DeliveryRecord[]>({ call: 'deliveries', webhook: name, status, limit })).map(deliveryInfo);
  }

  /** This node's agent events (encoded `agent_event` bodies): those a webhook takes become deliveries in the outbox. */
  agentEvents(agents: readonly string[], bodies: readonly Uint8Array[]): void {
    if (this.#hooks.size === 0 || this.#o.store === null) return;
    const batch: NewDelivery[] = [];
    for (let i = 0; i < bodies.length; i++) {
      const agent = agents[i]!;
      const hooks = [...this.#hooks.values()].filter((h) => h.agents === null || h.agents.has(agent));
      if (hooks.length === 0) continue;
      const event = (decodeBody(bodies[i]!) as { agent_event: AgentEvent }).agent_event;
      for (const h of hooks) {
        const kind = h.kinds.get(event.kind);
        if (kind === undefined) continue;
        const body = JSON.stringify({ agent: event.agent, sender: event.sender, kind, event, timestamp: event.timestamp });
        batch.push({ id: randomUUID(), webhook: h.record.name, conv: `${event.agent}\n${event.sender}`, kind, agent: event.agent, sender: event.sender, body, created_at: Date.now() });
      }
    }
    if (batch.length === 0) return;
    this.#writes = this.#writes.then(() => this.#write(batch));
  }

  async #write(batch: NewDelivery[]): Promise<void> {
    try {
      const stored = await this.#o.store!.call<number>({ call: 'enqueue', deliveries: batch, max: this.#o.maxOutbox });
      for (const d of batch.slice(stored)) this.#dropped.set(d.webhook, (this.#dropped.get(d.webhook) ?? 0) + 1);
      if (stored < batch.length) this.#o.log.warn({ dropped: batch.length - stored, max_webhook_outbox: this.#o.maxOutbox }, 'webhook outbox full: events dropped');
      if (stored > 0) this.#loop?.kick();
    } catch (err) {
      for (const d of batch) this.#dropped.set(d.webhook, (this.#dropped.get(d.webhook) ?? 0) + 1);
      this.#o.log.error({ err, dropped: batch.length }, 'storing webhook deliveries failed: events dropped');
    }
  }
}
