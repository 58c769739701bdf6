/** One node: every pair runs here, and there is no one else to tell of anything. */
import type { SubscriptionInfo } from './bus/event-bus.ts';
import type { Dispatch } from './dispatch.ts';
import type { ShardPool } from './hosts/shard-pool.ts';
import type { AgentChanges, FrameSink, Topology } from './topology.ts';
import { busTurn } from './turn-request.ts';

const NO_AGENT_CHANGES: AgentChanges = { agentChanged: () => undefined, purgeElsewhere: () => Promise.resolve() };

export class LocalTopology implements Topology {
  readonly #pool: ShardPool;
  readonly sharedSubscriptions = undefined;
  readonly agentChanges = NO_AGENT_CHANGES;
  readonly fences = null;

  constructor(pool: ShardPool) {
    this.#pool = pool;
  }

  entry(local: Dispatch): Dispatch {
    return local;
  }

  fire(sub: SubscriptionInfo, payload: string, depth: number, chain: number, turnId: string | null): boolean {
    return this.#pool.sendFor(busTurn(sub.target_agent, sub.source, payload, depth, chain, turnId));
  }

  watchingChanged(watching: boolean): void {
    this.#pool.broadcast({ type: 'observe', watching });
  }

  agentEvents(): void {}

  forwarded(): FrameSink | undefined {
    return undefined;
  }

  connClosed(): void {}

  stats(): null {
    return null;
  }

  /** A single node has no other node to hand its conversations to. */
  readonly drain = null;

  serve(): Promise<void> {
    return Promise.resolve();
  }

  leave(): void {}

  stop(): Promise<void> {
    return Promise.resolve();
  }
}
