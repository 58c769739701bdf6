/**
 * Tracing with the OpenTelemetry SDK (loaded only when `otlp` is set, see
 * tracing.ts): a BasicTracerProvider whose BatchSpanProcessor exports over
 * OTLP/HTTP (JSON). Spans follow the GenAI semantic conventions where they
 * apply: the turn is `invoke_agent <agent>`, a model call `chat <model>`,
 * a tool call `execute_tool <tool>`.
 */
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags, type Context, type Span, type SpanContext } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import {
  ATTR_GEN_AI_AGENT_NAME, ATTR_GEN_AI_OPERATION_NAME, ATTR_GEN_AI_PROVIDER_NAME, ATTR_GEN_AI_REQUEST_MODEL, ATTR_GEN_AI_SYSTEM,
  ATTR_GEN_AI_TOOL_NAME, ATTR_GEN_AI_USAGE_INPUT_TOKENS, ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
} from '@opentelemetry/semantic-conventions/incubating';
import type { Logger } from '../../shared/log.ts';
import { TURN_OUTCOMES, type CallRecord } from '../../shared/threads/shard-messages.ts';
import { VERSION } from '../../shared/version.ts';
import type { ForwardEnd, TracedTurn, Tracing } from './tracing-state.ts';

const epochMs = (performanceMs: number): number => performance.timeOrigin + performanceMs;

/** W3C trace context: `00-<trace id>-<span id>-<flags>`. */
export function formatTraceparent(sc: SpanContext): string {
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

export function parseTraceparent(header: string | null): Context {
  const m = header === null ? null : /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(header.trim());
  if (m === null || /^0+$/.test(m[1]!) || /^0+$/.test(m[2]!)) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, { traceId: m[1]!, spanId: m[2]!, traceFlags: Number.parseInt(m[3]!, 16) & TraceFlags.SAMPLED, isRemote: true });
}

export class OtelTracing implements Tracing {
  readonly #provider: BasicTracerProvider;
  readonly #tracer;
  readonly #openTurn: (seq: number) => unknown;
  /** Timed calls of open turns, by seq, until the turn ends. */
  readonly #pending = new Map<number, CallRecord[]>();

  constructor(endpoint: string, node: string | null, openTurn: (seq: number) => unknown, log: Logger) {
    const exporter = new OTLPTraceExporter({ url: endpoint });
    this.#provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'agentd', [ATTR_SERVICE_VERSION]: VERSION, ...(node === null ? {} : { 'agentd.node': node }) }),
      spanProcessors: [new BatchSpanProcessor(exporter)],
    });
    this.#tracer = this.#provider.getTracer('agentd', VERSION);
    this.#openTurn = openTurn;
    log.info({ endpoint }, 'traces are exported over OTLP/HTTP');
  }

  spans(records: readonly CallRecord[]): void {
    for (const r of records) {
      // A call that finished after its turn ended (a cancelled turn's tool) has no turn to join.
      if (this.#openTurn(r.seq) === undefined) continue;
      const list = this.#pending.get(r.seq);
      if (list === undefined) this.#pending.set(r.seq, [r]);
      else list.push(r);
    }
  }

  turnEnded(t: TracedTurn, outcome: number): void {
    const calls = this.#pending.get(t.seq);
    this.#pending.delete(t.seq);
    const agent = t.req.guest ?? t.req.agent;
    const parent = t.traceparent === undefined ? ROOT_CONTEXT : parseTraceparent(t.traceparent);
    const turn = this.#tracer.startSpan(`invoke_agent ${agent}`, {
      kind: SpanKind.SERVER,
      startTime: epochMs(t.openedAt),
      attributes: { [ATTR_GEN_AI_OPERATION_NAME]: 'invoke_agent', [ATTR_GEN_AI_AGENT_NAME]: agent, 'agentd.outcome': TURN_OUTCOMES[outcome]!, 'agentd.shard': t.shard, 'agentd.mode': t.req.mode },
    }, parent);
    const outcomeName = TURN_OUTCOMES[outcome]!;
    if (outcomeName === 'error' || outcomeName === 'lost' || outcomeName === 'stalled') turn.setStatus({ code: SpanStatusCode.ERROR, message: outcomeName });
    const inTurn = trace.setSpan(parent, turn);
    if (t.startedAt > 0) {
      this.#tracer.startSpan('shard hop', { startTime: epochMs(t.openedAt), attributes: { 'agentd.shard': t.shard } }, inTurn).end(epochMs(t.startedAt));
    }
    for (const r of calls ?? []) this.#child(r, inTurn);
    turn.end();
  }

  #child(r: CallRecord, parent: Context): void {
    let span: Span;
    if (r.kind === 'model') {
      span = this.#tracer.startSpan(`chat ${r.name}`, {
        kind: SpanKind.CLIENT,
        startTime: r.start,
        attributes: {
          [ATTR_GEN_AI_OPERATION_NAME]: 'chat', [ATTR_GEN_AI_REQUEST_MODEL]: r.name, [ATTR_GEN_AI_PROVIDER_NAME]: r.via, [ATTR_GEN_AI_SYSTEM]: r.via,
          [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: r.inputTokens ?? 0, [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: r.outputTokens ?? 0,
        },
      }, parent);
    } else if (r.kind === 'tool') {
      const attributes: Record<string, string> = { [ATTR_GEN_AI_OPERATION_NAME]: 'execute_tool', [ATTR_GEN_AI_TOOL_NAME]: r.name, 'agentd.tool.kind': r.via === '' ? 'harness' : 'mcp' };
      if (r.via !== '') attributes['agentd.mcp.server'] = r.via;
      span = this.#tracer.startSpan(`execute_tool ${r.name}`, { startTime: r.start, attributes }, parent);
    } else {
      span = this.#tracer.startSpan('commit', { startTime: r.start }, parent);
    }
    if (r.status !== 'ok') span.setStatus({ code: SpanStatusCode.ERROR, message: r.status });
    span.end(r.start + r.ms);
  }

  forwardSent(partition: number, owner: () => string | null): { traceparent: string; end(how: ForwardEnd): void } {
    const span = this.#tracer.startSpan('forward', { kind: SpanKind.CLIENT, attributes: { 'agentd.partition': partition } }, context.active());
    return { traceparent: formatTraceparent(span.spanContext()), end: (how) => this.#endForward(span, how, owner()) };
  }

  forwardServed(partition: number, from: string, traceparent: string | null): { traceparent: string; end(how: ForwardEnd): void } {
    const span = this.#tracer.startSpan('forwarded', { kind: SpanKind.SERVER, attributes: { 'agentd.partition': partition, 'agentd.from_node': from } }, parseTraceparent(traceparent));
    return { traceparent: formatTraceparent(span.spanContext()), end: (how) => this.#endForward(span, how, null) };
  }

  #endForward(span: Span, how: ForwardEnd, owner: string | null): void {
    if (owner !== null) span.setAttribute('agentd.owner_node', owner);
    span.setAttribute('agentd.forward.status', how);
    if (how === 'unserved' || how === 'lost') span.setStatus({ code: SpanStatusCode.ERROR, message: how });
    span.end();
  }

  async shutdown(): Promise<void> {
    await this.#provider.shutdown();
  }
}
