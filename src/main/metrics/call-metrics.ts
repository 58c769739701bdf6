/**
 * What the shards did for their turns (call-meter.ts records it there, and
 * it rides in their frame batches): model calls by provider and status,
 * tool calls, MCP calls by server, commits and their batch sizes, and
 * conversations evicted from memory.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import type { CallRecord } from '../../shared/threads/shard-messages.ts';

/** Seconds: a commit is a fraction of a millisecond; a model call may stream for minutes. */
const CALL_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];

export class CallMetrics {
  readonly #providerCalls: Counter;
  readonly #providerSeconds: Histogram;
  readonly #tokens: Counter;
  readonly #toolCalls: Counter;
  readonly #toolSeconds: Histogram;
  readonly #mcpCalls: Counter;
  readonly #commitSeconds: Histogram;
  readonly #commitBatch: Histogram;
  readonly #evictions: Counter;

  constructor(registry: Registry) {
    const registers = [registry];
    this.#providerCalls = new Counter({ name: 'agentd_provider_calls_total', help: 'Model calls, by provider (echo: the built-in model), model and status (ok, error, cancelled)', labelNames: ['provider', 'model', 'status'], registers });
    this.#providerSeconds = new Histogram({ name: 'agentd_provider_call_duration_seconds', help: 'Model calls, from request to the last streamed event, by provider', labelNames: ['provider'], buckets: CALL_BUCKETS, registers });
    this.#tokens = new Counter({ name: 'agentd_provider_tokens_total', help: 'Tokens the providers reported, by provider and direction (input, output)', labelNames: ['provider', 'direction'], registers });
    this.#toolCalls = new Counter({ name: 'agentd_tool_calls_total', help: 'Tool calls, by tool and status (ok, error, cancelled)', labelNames: ['tool', 'status'], registers });
    this.#toolSeconds = new Histogram({ name: 'agentd_tool_call_duration_seconds', help: 'Tool calls, by kind (harness, mcp)', labelNames: ['kind'], buckets: CALL_BUCKETS, registers });
    this.#mcpCalls = new Counter({ name: 'agentd_mcp_calls_total', help: 'MCP tool calls, by server and status (ok, error, cancelled)', labelNames: ['server', 'status'], registers });
    this.#commitSeconds = new Histogram({ name: 'agentd_storage_commit_duration_seconds', help: 'Group commits of finished turns, from handing the batch to the store to its commit', buckets: CALL_BUCKETS, registers });
    this.#commitBatch = new Histogram({ name: 'agentd_storage_commit_batch_turns', help: 'Turns per group commit', buckets: BATCH_BUCKETS, registers });
    this.#evictions = new Counter({ name: 'agentd_conversations_evicted_total', help: 'Idle conversations evicted from memory (memory_conversations, memory_bytes); they load again from the store', registers });
  }

  /** One batch's records. */
  add(records: readonly CallRecord[]): void {
    for (const r of records) {
      switch (r.kind) {
        case 'model':
          this.#providerCalls.inc({ provider: r.via, model: r.name, status: r.status });
          this.#providerSeconds.observe({ provider: r.via }, r.ms / 1000);
          if (r.inputTokens) this.#tokens.inc({ provider: r.via, direction: 'input' }, r.inputTokens);
          if (r.outputTokens) this.#tokens.inc({ provider: r.via, direction: 'output' }, r.outputTokens);
          break;
        case 'tool':
          this.#toolCalls.inc({ tool: r.name, status: r.status });
          this.#toolSeconds.observe({ kind: r.via === '' ? 'harness' : 'mcp' }, r.ms / 1000);
          if (r.via !== '') this.#mcpCalls.inc({ server: r.via, status: r.status });
          break;
        case 'commit_batch':
          this.#commitSeconds.observe(r.ms / 1000);
          this.#commitBatch.observe(r.size ?? 1);
          break;
        case 'evict':
          this.#evictions.inc(r.size ?? 1);
          break;
      }
    }
  }
}
