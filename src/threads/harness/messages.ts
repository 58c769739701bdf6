/**
 * Messages between a shard and its harness thread (the worker thread that
 * runs harness modules, away from the shard's memory and environment). The
 * shard trusts nothing that comes back: every field is checked on arrival.
 */
import type { Capability } from '../../shared/config.ts';
import type { ToolSpec } from '../../models/types.ts';

/** What the harness thread is started with: nothing secret. */
export interface HarnessThreadInit {
  /** $AGENTD_HOME: modules are loaded only from its `harness` folder. */
  home: string;
}

export type ToHarness =
  /** Load a module (if not yet loaded) and list its tools. */
  | { t: 'describe'; id: number; module: string }
  /** Run one tool of a module; `granted` says which capability proxies the tool's ctx holds. */
  | { t: 'call'; id: number; module: string; tool: string; args: unknown; agent: string; sender: string; granted: Capability[] }
  /** The turn was cancelled: abort the call's `ctx.signal`. */
  | { t: 'abort'; id: number; reason: string }
  /** The answer to a capability request the thread made. */
  | { t: 'cap_reply'; id: number; ok: true; value: unknown }
  | { t: 'cap_reply'; id: number; ok: false; message: string };

export type FromHarness =
  /** The answer to `describe` (value: ToolSpec[]) or `call` (value: the output text). */
  | { t: 'reply'; id: number; ok: true; value: unknown }
  | { t: 'reply'; id: number; ok: false; message: string }
  /** Call `id` has its module loaded and its tool is running now: its time limit starts. */
  | { t: 'started'; id: number }
  /** A tool of call `call` uses a capability; the shard decides whether it may. */
  | { t: 'cap'; id: number; call: number; capability: string; args: unknown[] };

const NO_PARAMETERS = { type: 'object', properties: {}, additionalProperties: false };

/** Tool specs as the shard accepts them from the thread: names and descriptions as strings, parameters an object. */
export function toolSpecsFrom(value: unknown, module: string): ToolSpec[] {
  if (!Array.isArray(value)) throw new Error(`harness module ${module}: its thread sent no tool list`);
  return value.map((t: unknown, i): ToolSpec => {
    const spec = (t ?? {}) as Partial<ToolSpec>;
    if (typeof spec.name !== 'string' || spec.name === '') throw new Error(`harness module ${module}: tools[${i}] has no name`);
    const parameters = typeof spec.parameters === 'object' && spec.parameters !== null && !Array.isArray(spec.parameters) ? spec.parameters : NO_PARAMETERS;
    return { name: spec.name, description: typeof spec.description === 'string' ? spec.description : '', parameters };
  });
}

export { NO_PARAMETERS };
