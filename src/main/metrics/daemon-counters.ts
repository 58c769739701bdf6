/**
 * Main's own counters (main-meter.ts) as Prometheus metrics, read when
 * scraped, and the histograms main observes while the metrics are on.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import { mainMeter, type ForwardStatus } from './main-meter.ts';

const SECONDS_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** An open connection's traffic so far (its socket's bytesRead and bytesWritten). */
export interface Traffic {
  readonly transport: 'unix' | 'tcp';
  traffic(): { in: number; out: number };
}

function pulled(registry: Registry, name: string, help: string, read: () => number): void {
  new Counter({ name, help, registers: [registry], collect() { this.reset(); this.inc(read()); } });
}

export function registerDaemonCounters(registry: Registry, connections: () => Iterable<Traffic>): void {
  pulled(registry, 'agentd_bus_publishes_total', 'Events published on the bus: by clients, harnesses and schedules, and finished turns\' agent:<name>:done while subscribed', () => mainMeter.busPublishes);
  pulled(registry, 'agentd_bus_fired_turns_total', 'Turns the event bus fired', () => mainMeter.busFiredTurns);
  pulled(registry, 'agentd_shard_crashes_total', 'Shards (worker threads) replaced after a crash (agentd_shard_stalls_total counts stalls)', () => mainMeter.shardCrashes);
  const byDirection = (name: string, help: string, dir: 'in' | 'out'): void => {
    new Counter({
      name, help, labelNames: ['listener'], registers: [registry],
      collect() {
        const sum = { unix: mainMeter.closedBytes.unix[dir], tcp: mainMeter.closedBytes.tcp[dir] };
        for (const c of connections()) sum[c.transport] += c.traffic()[dir];
        this.reset();
        this.inc({ listener: 'unix' }, sum.unix);
        this.inc({ listener: 'tcp' }, sum.tcp);
      },
    });
  };
  byDirection('agentd_received_bytes_total', 'Bytes read from clients, by listener', 'in');
  byDirection('agentd_sent_bytes_total', 'Bytes written to clients, by listener', 'out');
  const search = new Histogram({ name: 'agentd_search_duration_seconds', help: 'Session searches (search_sessions), from arrival to answer', buckets: SECONDS_BUCKETS, registers: [registry] });
  const forwarded = new Counter({ name: 'agentd_cluster_forwarded_calls_total', help: 'Requests this node forwarded to the node serving their partition (cluster mode), by status (ok; unserved: no node took it; lost: its owner went away mid-call; cancelled: its client left)', labelNames: ['status'], registers: [registry] });
  const forwardSeconds = new Histogram({ name: 'agentd_cluster_forward_duration_seconds', help: 'Forwarded requests, from sent to their last reply (cluster mode)', buckets: SECONDS_BUCKETS, registers: [registry] });
  mainMeter.timings = {
    search: (s) => search.observe(s),
    forwarded: (status: ForwardStatus, s: number) => {
      forwarded.inc({ status });
      forwardSeconds.observe(s);
    },
  };
}
