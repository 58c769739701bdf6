/**
 * The comlink channel from a shard to main's harness host (harness-host.ts):
 * capability calls off the per-turn path, where comlink's cost is paid only
 * by the harness code that asks.
 */
import type { Capability } from '../config.ts';

/** What a shard sees of main's harness host, through comlink (PROTOCOL §5). */
export interface HarnessHostApi {
  /** `who` is the running turn's pair, set by the shard (never by a tool's arguments). */
  call(who: CapabilityCaller, capability: Capability, args: unknown[]): Promise<unknown>;
}

export interface CapabilityCaller {
  agent: string;
  sender: string;
}
