/**
 * The event bus: a table of subscriptions, indexed by exact source, that
 * turns published events into agent turns (PROTOCOL §4, Daemon and event
 * bus). It lives on main, so a publish runs to completion without
 * interleaving: a `once` subscription is removed from the table before the
 * publish that fired it yields, and no other publish can fire it again.
 */
import type { Logger } from '../../shared/log.ts';
import type { StoragePool } from '../hosts/storage-pool.ts';
import { tooMany } from '../limits.ts';
import { ChainBudget } from './chain-budget.ts';
import { FireQueue } from './fire-queue.ts';
import { fireTurnId } from '../turn-request.ts';
import { DEFAULTS } from '../../shared/config.ts';
import type { SubscriptionInfo } from '../../shared/wire/ops.ts';
import { mainMeter } from '../metrics/main-meter.ts';

export type { SubscriptionInfo };

interface Subscription extends SubscriptionInfo {
  /** Set when removed, so a publish iterating a snapshot skips it. */
  removed: boolean;
}

/** A chain of fires deeper than this is cut (PROTOCOL §4). */
export const MAX_FIRE_DEPTH = 8;

export interface EventBusOptions {
  /** Persists the table; null with persistence off (ids then come from a counter). */
  storage: StoragePool | null;
  /** Starts the turn of a fired subscription in fan-out chain `chain`, under `turnId` if any; false if it could not (its agent is gone, its queue is full). */
  fire(sub: SubscriptionInfo, payload: string, depth: number, chain: number, turnId: string | null): boolean;
  /** Fired turns one chain may start in total (`max_chain_turns`; default DEFAULTS.maxChainTurns). */
  maxChainTurns?: number;
  /** A chain reached its budget: shown to observers once per chain. */
  chainCut?(sub: SubscriptionInfo, maxChainTurns: number): void;
  log: Logger;
  /** `max_subscriptions`: subscribing past it gets 429 (unlimited when absent). */
  maxSubscriptions?: number;
  /**
   * Cluster mode: other nodes share the table through the store. A `once`
   * subscription fires only once this node's delete of its row took it (the
   * store's claim: of concurrent publishes on several nodes, one deletes it);
   * `changed` is told after each change of the stored table, so the other
   * nodes reload it.
   */
  cluster?: { changed(): void };
  /**
   * The agents whose `agent:<name>:done` has subscribers changed (doneAgents):
   * told once per synchronous run of changes, before any caller of
   * subscribe or unsubscribe resumes, so a turn sent after the answer sees it.
   */
  doneWatchChanged?(agents: string[]): void;
}

const DONE_PREFIX = 'agent:';
const DONE_SUFFIX = ':done';

/** The agent whose done event `source` names, or null. */
function doneAgentOf(source: string): string | null {
  return source.startsWith(DONE_PREFIX) && source.endsWith(DONE_SUFFIX) && source.length > DONE_PREFIX.length + DONE_SUFFIX.length
    ? source.slice(DONE_PREFIX.length, -DONE_SUFFIX.length)
    : null;
}

export class EventBus {
  readonly #opts: EventBusOptions;
  readonly #byId = new Map<number, Subscription>();
  readonly #bySource = new Map<string, Subscription[]>();
  #doneWatchDirty = false;
  readonly #chains: ChainBudget;
  /** Fires waiting to start, a slice per event-loop turn (FireQueue). */
  readonly #fires = new FireQueue();
  #nextId = 1;
  /** Subscriptions being stored: they count against the limit before they are in the table. */
  #adding = 0;

  constructor(opts: EventBusOptions, stored: readonly SubscriptionInfo[] = []) {
    this.#opts = opts;
    this.#chains = new ChainBudget(opts.maxChainTurns ?? DEFAULTS.maxChainTurns);
    for (const s of stored) this.#add(s);
  }

  get size(): number {
    return this.#byId.size;
  }

  /** The bus's counters for `get_stats`. */
  stats(): { chain_turns_dropped: number } {
    return { chain_turns_dropped: this.#chains.dropped };
  }

  /** Chains with fired turns still open. */
  get liveChains(): number {
    return this.#chains.live;
  }

  /** Cluster mode: the share of `chain`'s budget a fire sent to another node carries (ChainBudget.carve). */
  carveChain(chain: number): number {
    return this.#chains.carve(chain);
  }

  /** Cluster mode: a chain continued here by a fired turn from another node, with the budget it carried. */
  carriedChain(budget: number): number {
    return this.#chains.carried(budget);
  }

  /** A turn fired in `chain` ended: the chain is forgotten with its last turn. */
  chainTurnEnded(chain: number): void {
    this.#chains.turnEnded(chain);
  }

  #add(info: SubscriptionInfo): Subscription {
    // Cluster mode: a reload (replace) may have loaded the row while its subscribe awaited the store's insert.
    const known = this.#byId.get(info.id);
    if (known !== undefined) return known;
    const sub: Subscription = { ...info, removed: false };
    this.#byId.set(sub.id, sub);
    const list = this.#bySource.get(sub.source);
    if (list === undefined) {
      this.#bySource.set(sub.source, [sub]);
      this.#sourceAddedOrGone(sub.source);
    } else list.push(sub);
    if (sub.id >= this.#nextId) this.#nextId = sub.id + 1;
    return sub;
  }

  #remove(sub: Subscription): void {
    sub.removed = true;
    this.#byId.delete(sub.id);
    const list = this.#bySource.get(sub.source);
    if (list === undefined) return;
    // Replaced, not spliced: a publish may be iterating the old array.
    const rest = list.filter((s) => s !== sub);
    if (rest.length === 0) {
      this.#bySource.delete(sub.source);
      this.#sourceAddedOrGone(sub.source);
    } else this.#bySource.set(sub.source, rest);
  }

  /** The agents whose `agent:<name>:done` has subscribers. */
  doneAgents(): string[] {
    const agents: string[] = [];
    for (const source of this.#bySource.keys()) {
      const agent = doneAgentOf(source);
      if (agent !== null) agents.push(agent);
    }
    return agents;
  }

  /** A source got its first subscriber or lost its last: a done source changes doneAgents, told once per run. */
  #sourceAddedOrGone(source: string): void {
    if (this.#opts.doneWatchChanged === undefined || doneAgentOf(source) === null || this.#doneWatchDirty) return;
    this.#doneWatchDirty = true;
    queueMicrotask(() => {
      this.#doneWatchDirty = false;
      this.#opts.doneWatchChanged?.(this.doneAgents());
    });
  }

  /** `reload_config`: a new `max_subscriptions`, for subscribes from now on. */
  setMaxSubscriptions(max: number): void {
    this.#opts.maxSubscriptions = max;
  }

  async subscribe(source: string, targetAgent: string, once: boolean): Promise<SubscriptionInfo> {
    const max = this.#opts.maxSubscriptions ?? Infinity;
    if (this.#byId.size + this.#adding >= max) throw tooMany('subscriptions', max, 'max_subscriptions');
    const storage = this.#opts.storage;
    this.#adding++;
    try {
      const id = storage === null ? this.#nextId++ : await storage.run<number>({ op: 'subscription_insert', source, targetAgent, once });
      const added = info(this.#add({ id, source, target_agent: targetAgent, once }));
      this.#opts.cluster?.changed();
      return added;
    } finally {
      this.#adding--;
    }
  }

  /** False if there is no such subscription. */
  async unsubscribe(id: number): Promise<boolean> {
    const sub = this.#byId.get(id);
    if (sub === undefined) return false;
    this.#remove(sub);
    await this.#opts.storage?.run({ op: 'subscription_delete', ids: [id] });
    this.#opts.cluster?.changed();
    return true;
  }

  /** Cluster mode: the table as the store holds it now (another node changed it). */
  replace(stored: readonly SubscriptionInfo[]): void {
    for (const sub of [...this.#byId.values()]) this.#remove(sub);
    for (const s of stored) this.#add(s);
  }

  /** Subscriptions whose target agent is gone go with it (`stored: false`: their rows are already deleted). */
  async removeAgent(agent: string, opts: { stored: boolean } = { stored: true }): Promise<void> {
    const gone = [...this.#byId.values()].filter((s) => s.target_agent === agent);
    for (const s of gone) this.#remove(s);
    if (gone.length > 0 && opts.stored) await this.#opts.storage?.run({ op: 'subscription_delete', ids: gone.map((s) => s.id) });
  }

  /** `rename_agent`, once stored: the subscriptions targeting `from`, or listening for its `done`, now name `to` (ids kept). */
  renameAgent(from: string, to: string): void {
    const done = `agent:${from}:done`;
    const named = [...this.#byId.values()].filter((s) => s.target_agent === from || s.source === done);
    for (const s of named) {
      this.#remove(s);
      this.#add({ id: s.id, source: s.source === done ? `agent:${to}:done` : s.source, target_agent: s.target_agent === from ? to : s.target_agent, once: s.once });
    }
    if (named.length > 0) this.#opts.cluster?.changed();
  }

  list(): SubscriptionInfo[] {
    return [...this.#byId.values()].sort((a, b) => a.id - b.id).map(info);
  }

  /**
   * Fires every subscription of `source` (exact match) and removes the `once`
   * ones; resolves with how many fired, once those removals are stored.
   * `depth` is how many fires led to this publish (0 from a client); `chain`
   * the fan-out chain it continues (0: it starts one). What fires is decided
   * now, before this call yields (a `once` subscription leaves the table, the
   * chain's budget is counted); the turns start through the fire queue, in
   * order, a slice per event-loop turn. A publish with a `key` (a schedule's
   * tick) names each fired turn by it, so publishing it again replays the
   * turns the first publish stored instead of running them twice.
   */
  async publish(source: string, payload: string, depth: number, chain = 0, key: string | null = null): Promise<number> {
    mainMeter.busPublishes++;
    const subs = this.#bySource.get(source);
    if (subs === undefined) return 0;
    if (depth + 1 > MAX_FIRE_DEPTH) {
      this.#opts.log.warn({ source, depth }, `event chain deeper than ${MAX_FIRE_DEPTH} fires: not fired further`);
      return 0;
    }
    const inChain = this.#chains.begin(chain);
    let fired = 0;
    const used: number[] = [];
    const admitted: Subscription[] = [];
    const storage = this.#opts.storage;
    for (const sub of subs) {
      if (sub.removed) continue;
      if (this.#opts.cluster !== undefined && sub.once && storage !== null) {
        if (await this.#fireClaimed(sub, payload, depth, inChain, storage, key)) fired++;
        continue;
      }
      if (!this.#admit(sub, inChain)) continue;
      if (sub.once) {
        this.#remove(sub);
        used.push(sub.id);
      }
      admitted.push(sub);
    }
    const started = new Promise<number>((done) => {
      this.#fires.add({
        fires: admitted,
        fire: (sub) => {
          if (this.#opts.fire(sub, payload, depth + 1, inChain, fireTurnId(key, sub.id))) {
            mainMeter.busFiredTurns++;
            return true;
          }
          this.#chains.unadmit(inChain);
          return false;
        },
        done,
      });
    });
    this.#chains.settle(inChain);
    if (used.length > 0) await this.#opts.storage?.run({ op: 'subscription_delete', ids: used });
    return fired + (await started);
  }

  /**
   * Cluster mode, a `once` subscription: within the chain's budget first (a
   * cut chain does not use it up), then the store's claim: only the node
   * whose delete took the row fires it.
   */
  async #fireClaimed(sub: Subscription, payload: string, depth: number, inChain: number, storage: StoragePool, key: string | null): Promise<boolean> {
    if (!this.#admit(sub, inChain)) return false;
    this.#remove(sub);
    const took = await storage.run<number>({ op: 'subscription_delete', ids: [sub.id] });
    if (took !== 1) {
      this.#chains.unadmit(inChain);
      return false;
    }
    this.#opts.cluster!.changed();
    if (this.#opts.fire(sub, payload, depth + 1, inChain, fireTurnId(key, sub.id))) {
      mainMeter.busFiredTurns++;
      return true;
    }
    this.#chains.unadmit(inChain);
    return false;
  }

  /** Counts a fire against its chain; past the budget it is dropped (logged and shown once per chain). */
  #admit(sub: SubscriptionInfo, chain: number): boolean {
    const verdict = this.#chains.admit(chain);
    if (verdict === 'first_cut') {
      const max = this.#chains.maxTurns;
      this.#opts.log.warn({ source: sub.source, agent: sub.target_agent, max_chain_turns: max }, 'event chain reached max_chain_turns: further fires dropped');
      this.#opts.chainCut?.(sub, max);
    }
    return verdict === 'ok';
  }
}

function info(s: SubscriptionInfo): SubscriptionInfo {
  return { id: s.id, source: s.source, target_agent: s.target_agent, once: s.once };
}
