/**
 * The fan-out budget of the event bus. A chain is everything one publish or
 * one finished turn sets off: the turns it fires, the turns their `done`
 * events fire, and so on. The depth cut bounds a chain's length; this bounds
 * its width: at most `maxTurns` fired turns per chain over all depths. A
 * chain lives in a small table while it has turns open and is dropped once
 * its last turn ends.
 */
import { packr } from '../../shared/codec.ts';
import type { SubscriptionInfo } from '../../shared/wire/ops.ts';
import { agentEventBody } from '../../shared/wire/frames.ts';

interface Chain {
  /** Fired turns this chain may start here: `maxTurns`, or the share another node sent with a fired turn (cluster mode). */
  max: number;
  fired: number;
  /** Fired turns not yet ended. */
  open: number;
  /** A fire was refused already (logged and shown once per chain). */
  cut: boolean;
}

export class ChainBudget {
  readonly #maxTurns: number;
  readonly #chains = new Map<number, Chain>();
  #nextId = 1;
  #dropped = 0;

  constructor(maxTurns: number) {
    this.#maxTurns = maxTurns;
  }

  get maxTurns(): number {
    return this.#maxTurns;
  }

  /** Fires refused over all chains (`get_stats`). */
  get dropped(): number {
    return this.#dropped;
  }

  /** Chains with turns still open (for tests and leaks). */
  get live(): number {
    return this.#chains.size;
  }

  /** The chain a publish belongs to: `chain` if it continues one that is still known, else a new one. */
  begin(chain: number): number {
    if (chain !== 0 && this.#chains.has(chain)) return chain;
    const id = this.#nextId++;
    this.#chains.set(id, { max: this.#maxTurns, fired: 0, open: 0, cut: false });
    return id;
  }

  /**
   * Cluster mode: an admitted fire of `chain` goes to another node. It takes
   * half of what the chain has left (rounded down), which is counted as
   * fired here: the turns its `done` fires there draw on that share only, so
   * the chain's fires over all nodes stay within `maxTurns`.
   */
  carve(chain: number): number {
    const c = this.#chains.get(chain);
    if (c === undefined) return 0;
    const share = Math.floor(Math.max(0, c.max - c.fired) / 2);
    c.fired += share;
    return share;
  }

  /**
   * Cluster mode: a chain continued here by a fired turn another node sent,
   * with the share of the budget it carried; its one open turn is that one.
   */
  carried(budget: number): number {
    const id = this.#nextId++;
    this.#chains.set(id, { max: budget, fired: 0, open: 1, cut: false });
    return id;
  }

  /**
   * Counts one fire against the chain: `ok` if within the budget, else the
   * fire is dropped and counted; `first` says this is the chain's first cut.
   */
  admit(chain: number): 'ok' | 'first_cut' | 'cut' {
    const c = this.#chains.get(chain);
    if (c === undefined) return 'ok';
    if (c.fired < c.max) {
      c.fired++;
      c.open++;
      return 'ok';
    }
    this.#dropped++;
    if (c.cut) return 'cut';
    c.cut = true;
    return 'first_cut';
  }

  /** An admitted fire started no turn after all (its agent is gone, its queue full). */
  unadmit(chain: number): void {
    const c = this.#chains.get(chain);
    if (c === undefined) return;
    c.fired--;
    this.#ended(chain, c);
  }

  /** One of the chain's fired turns ended (or was lost with its shard). */
  turnEnded(chain: number): void {
    const c = this.#chains.get(chain);
    if (c !== undefined) this.#ended(chain, c);
  }

  /** Called after a publish: a chain that fired nothing still open is forgotten. */
  settle(chain: number): void {
    const c = this.#chains.get(chain);
    if (c !== undefined && c.open === 0) this.#chains.delete(chain);
  }

  #ended(chain: number, c: Chain): void {
    c.open--;
    if (c.open <= 0) this.#chains.delete(chain);
  }
}

/** The `chain_cut` agent event observers see once per cut chain, encoded once (PROTOCOL §4.4). */
export function chainCutEvent(sub: Pick<SubscriptionInfo, 'source' | 'target_agent'>, maxTurns: number): Uint8Array {
  const content = `max_chain_turns (${maxTurns}) reached: further fires of this chain are dropped`;
  const ev = { agent: sub.target_agent, sender: `event:${sub.source}`, kind: 'chain_cut', content, timestamp: new Date().toISOString(), ephemeral: false } as const;
  return Uint8Array.from(packr.pack(agentEventBody(ev)));
}
