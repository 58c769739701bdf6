/**
 * The shard's side of main's watchdog (see Heartbeat in shared/threads/heartbeat.ts).
 * A timer bumps the beat: while this thread's event loop is stuck in
 * synchronous work, no timer runs and the beat stops, which main sees without
 * the shard's help. The seq of the turn about to run is stored first, so main
 * knows which turn a frozen shard was in even if no batch said so.
 */
import { Heartbeat } from './threads/heartbeat.ts';

let cells: Int32Array | null = null;

/** Starts beating into `buffer` every `intervalMs`; once per thread. */
export function startHeartbeat(buffer: SharedArrayBuffer, intervalMs: number): void {
  cells = new Int32Array(buffer);
  const beat = cells;
  setInterval(() => Atomics.add(beat, Heartbeat.BEAT, 1), intervalMs);
}

/** Records the turn this shard is about to run (a no-op where no heartbeat runs, as in unit tests). */
export function markRunning(seq: number): void {
  if (cells !== null) Atomics.store(cells, Heartbeat.RUNNING, seq);
}
