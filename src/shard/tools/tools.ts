/**
 * Tools an agent can call, and running one step's calls. Calls of one step
 * run concurrently; results are reported in completion order and returned in
 * call order. A throwing tool is an `is_error` result, not a failed turn.
 * Every output (and error text) is redacted before anyone sees it: it goes
 * to clients, observers, the history and the database.
 */
import type { ToolCall } from '../../shared/protocol.ts';
import { GENERIC_REDACTOR, type Redactor } from '../../shared/redact.ts';
import type { ToolSpec } from '../../models/types.ts';
import type { Cancellation } from '../turn/cancellation.ts';
import { CallMeter, callMeter } from '../call-meter.ts';

/** The capability functions a harness was granted; the others are absent. */
export interface Capabilities {
  peers?: { list(): Promise<unknown> };
  sessions?: { search(query: string, opts?: Record<string, unknown>): Promise<unknown> };
  skills?: { list?(): Promise<unknown>; get?(name: string): Promise<unknown> };
}

export interface ToolContext {
  agent: string;
  sender: string;
  /** Aborted when the turn is cancelled. */
  readonly signal: AbortSignal;
  /** Only what this tool's harness was granted. */
  capabilities: Capabilities;
}

export interface Tool extends ToolSpec {
  /** The MCP server behind it; absent for a harness tool. */
  mcpServer?: string;
  run(args: unknown, ctx: ToolContext): Promise<string> | string;
}

export type ToolSet = ReadonlyMap<string, Tool>;

export const NO_TOOLS: ToolSet = new Map();

export interface ToolResult {
  call_id: string;
  name: string;
  output: string;
  duration_ms: number;
  is_error: boolean;
}

/** Asked before a call runs: null lets it run; a text denies it, becoming its error result. */
export type ToolGate = (call: ToolCall) => Promise<string | null> | null;

async function runOne(tools: ToolSet, call: ToolCall, ctx: ToolContext, redactor: Redactor, gate: ToolGate | null): Promise<ToolResult> {
  const waiting = gate?.(call) ?? null;
  const denial = waiting === null ? null : await waiting;
  const began = performance.now();
  const done = (output: string, isError: boolean): ToolResult => ({
    call_id: call.id,
    name: call.name,
    output: redactor.all(output),
    duration_ms: Math.round(performance.now() - began),
    is_error: isError,
  });
  if (denial !== null) return done(denial, true);
  const tool = tools.get(call.name);
  if (tool === undefined) return done(`unknown tool "${call.name}"`, true);
  let args: unknown;
  try {
    args = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
  } catch (err) {
    return done(`arguments are not valid JSON: ${(err as Error).message}`, true);
  }
  try {
    return done(String(await tool.run(args, ctx)), false);
  } catch (err) {
    return done(err instanceof Error ? err.message : String(err), true);
  }
}

/**
 * Runs all calls at once. `onResult` sees each result as it completes; the
 * returned array is in call order. Rejects with the abort reason if the turn
 * is cancelled before every call has answered.
 */
export async function runTools(
  tools: ToolSet,
  calls: readonly ToolCall[],
  who: { agent: string; sender: string; seq?: number },
  cancel: Cancellation,
  onResult: (result: ToolResult) => void,
  redactor: Redactor = GENERIC_REDACTOR,
  gate: ToolGate | null = null,
): Promise<ToolResult[]> {
  const ctx: ToolContext = { agent: who.agent, sender: who.sender, capabilities: {}, get signal() { return cancel.signal; } };
  const results = await Promise.all(
    calls.map((call) =>
      runOne(tools, call, ctx, redactor, gate).then((r) => {
        if (callMeter.on) recordTool(tools, r, who.seq ?? 0, cancel.aborted);
        if (!cancel.aborted) onResult(r);
        return r;
      }),
    ),
  );
  cancel.throwIfAborted();
  return results;
}

/** A finished call, for the metrics and traces (call-meter.ts). */
function recordTool(tools: ToolSet, r: ToolResult, seq: number, cancelled: boolean): void {
  callMeter.tool(seq, r.name, tools.get(r.name)?.mcpServer ?? '', cancelled ? 'cancelled' : r.is_error ? 'error' : 'ok', CallMeter.now() - r.duration_ms, r.duration_ms);
}
