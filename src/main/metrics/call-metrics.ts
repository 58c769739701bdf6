/**
 * What the shards did for their turns: model calls by provider and status,
 * tool calls, MCP calls by server, group commits and their sizes, and
 * conversations evicted from memory. Shards sum them into tallies and ship
 * those in their frame batches (call-meter.ts); main adds them up here (a
 * few additions per batch) and renders them only when scraped.
 */
import { Counter, type Registry } from 'prom-client';
import { SECONDS_BUCKETS, SIZE_BUCKETS, Tallies, type Tally } from '../../shared/threads/call-tally.ts';
import { pulledHistogram, type Series } from './pulled-histogram.ts';

export class CallMetrics {
  readonly #totals = new Tallies();

  constructor(registry: Registry) {
    const totals = this.#totals;
    const of = (kind: Tally['kind']): Tally[] => [...totals.values()].filter((t) => t.kind === kind);
    const counter = (name: string, help: string, labelNames: string[], fill: (c: Counter) => void): void => {
      new Counter({ name, help, labelNames, registers: [registry], collect() { this.reset(); fill(this); } });
    };
    counter('agentd_provider_calls_total', 'Model calls, by provider (echo: the built-in model), model and status (ok, error, cancelled)', ['provider', 'model', 'status'], (c) => {
      for (const t of of('model')) c.inc({ provider: t.via, model: t.name, status: t.status }, t.n);
    });
    counter('agentd_provider_tokens_total', 'Tokens the providers reported, by provider and direction (input, output)', ['provider', 'direction'], (c) => {
      for (const t of of('model')) {
        c.inc({ provider: t.via, direction: 'input' }, t.inputTokens);
        c.inc({ provider: t.via, direction: 'output' }, t.outputTokens);
      }
    });
    counter('agentd_tool_calls_total', 'Tool calls, by tool and status (ok, error, cancelled)', ['tool', 'status'], (c) => {
      for (const t of of('tool')) c.inc({ tool: t.name, status: t.status }, t.n);
    });
    counter('agentd_mcp_calls_total', 'MCP tool calls, by server and status (ok, error, cancelled)', ['server', 'status'], (c) => {
      for (const t of of('tool')) if (t.via !== '') c.inc({ server: t.via, status: t.status }, t.n);
    });
    counter('agentd_compactions_total', 'Conversations compacted, by trigger (auto: before a turn whose history passed compact_threshold; request: compact) and status', ['trigger', 'status'], (c) => {
      for (const t of of('compaction')) c.inc({ trigger: t.via, status: t.status }, t.n);
    });
    counter('agentd_conversations_evicted_total', 'Idle conversations evicted from memory (memory_conversations, memory_bytes); they load again from the store', [], (c) => {
      c.inc(of('evict').reduce((n, t) => n + t.n, 0));
    });
    const timed = (t: Tally, labels: Record<string, string>): Series => ({ labels, buckets: t.buckets, sum: t.seconds, count: t.n });
    pulledHistogram(registry, 'agentd_provider_call_duration_seconds', 'Model calls, from request to the last streamed event, by provider', SECONDS_BUCKETS, () => of('model').map((t) => timed(t, { provider: t.via })));
    pulledHistogram(registry, 'agentd_tool_call_duration_seconds', 'Tool calls, by kind (harness, mcp)', SECONDS_BUCKETS, () => of('tool').map((t) => timed(t, { kind: t.via === '' ? 'harness' : 'mcp' })));
    pulledHistogram(registry, 'agentd_storage_commit_duration_seconds', 'Group commits of finished turns, from handing the batch to the store to its commit', SECONDS_BUCKETS, () => of('commit_batch').map((t) => timed(t, {})));
    pulledHistogram(registry, 'agentd_storage_commit_batch_turns', 'Turns per group commit', SIZE_BUCKETS, () => of('commit_batch').map((t) => ({ labels: {}, buckets: t.sizes!, sum: t.size, count: t.n })));
  }

  /** What one shard batch shipped. */
  add(tallies: readonly Tally[]): void {
    for (const t of tallies) this.#totals.merge(t);
  }
}
