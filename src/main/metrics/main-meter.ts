/**
 * Counters main's own code bumps where things happen (the bus, connections,
 * searches, forwarded calls, shard restarts): plain numbers, an addition
 * each, read by the registry only when scraped (daemon-counters.ts). The
 * timings are observed only while the metrics are on (`timings` is set then).
 * One per process, like the code that counts.
 */
export interface Timings {
  /** Seconds a session search took. */
  search(seconds: number): void;
  /** A forwarded call ended (cluster mode): how, and its seconds from sent to its last reply. */
  forwarded(status: ForwardStatus, seconds: number): void;
}

export type ForwardStatus = 'ok' | 'unserved' | 'lost' | 'cancelled';

export const mainMeter = {
  busPublishes: 0,
  busFiredTurns: 0,
  /** Shards replaced after a crash (stalls are counted by the watchdog, `shard_stalls`). */
  shardCrashes: 0,
  /** Bytes read and written by connections that closed, per listener (open ones are read from their sockets). */
  closedBytes: { unix: { in: 0, out: 0 }, tcp: { in: 0, out: 0 } },
  timings: null as Timings | null,
};

export function connectionClosed(listener: 'unix' | 'tcp', bytesIn: number, bytesOut: number): void {
  const b = mainMeter.closedBytes[listener];
  b.in += bytesIn;
  b.out += bytesOut;
}
