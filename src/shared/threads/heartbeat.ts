/**
 * The watchdog's view of a shard, an Int32Array over ShardInit.heartbeat:
 * the shard's timer bumps BEAT (a busy event loop stops bumping it), and the
 * job runner stores the seq of the turn it starts in RUNNING before running
 * it, so main knows which turn a frozen shard was in.
 */
export const Heartbeat = { BEAT: 0, RUNNING: 1, CELLS: 2 } as const;
