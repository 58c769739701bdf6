/**
 * Traces, off by default (`otlp`). While off, nothing here loads the
 * OpenTelemetry SDK, and what the hot path pays is a null check
 * (`tracing.now`). While on, otel-tracing.ts exports over OTLP/HTTP:
 * a span per turn on main, from its arrival to its last frame, with
 * children for its hop to the shard, each model call, each tool call and
 * its commit. The shard times those calls (call-meter.ts) and ships them
 * with its frame batches; main makes the spans, with their recorded start
 * and end, when the turn ends. A forwarded call (cluster mode) gets a span
 * on both nodes, its context carried in the NATS request's `traceparent`
 * header, and the turn it runs on the owner is that span's child.
 */
import type { Logger } from '../../shared/log.ts';
import type { OpenTurn, TurnMeterSink } from '../turn-ledger.ts';
import { tracing, withRemoteParent, type ForwardEnd, type Tracing } from './tracing-state.ts';

export type { ForwardEnd, Tracing };
export { tracing, withRemoteParent };

/** Loads the SDK and starts exporting to `endpoint` (an OTLP/HTTP traces URL). */
export async function startTracing(endpoint: string, node: string | null, openTurn: (seq: number) => OpenTurn | undefined, log: Logger): Promise<Tracing> {
  const { OtelTracing } = await import('./otel-tracing.ts');
  const t = new OtelTracing(endpoint, node, openTurn, log);
  tracing.now = t;
  return t;
}

/** One sink from the metrics' and the traces' (either may be off). */
export function bothSinks(a: TurnMeterSink | null, b: TurnMeterSink | null): TurnMeterSink | null {
  if (a === null || b === null) return a ?? b;
  return { turnEnded: (t, outcome) => (a.turnEnded(t, outcome), b.turnEnded(t, outcome)) };
}
