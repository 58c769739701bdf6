/**
 * The process's tracing (tracing.ts), apart so that the turn ledger can
 * read it without importing what tracing needs.
 */
import type { CallRecord } from '../../shared/threads/shard-messages.ts';

/** How a forwarded call ended, on either side. */
export type ForwardEnd = 'ok' | 'unserved' | 'lost' | 'cancelled';

export interface Tracing {
  /** A turn ended (the ledger tells it): its span and its children are made and exported. */
  turnEnded(t: TracedTurn, outcome: number): void;
  /** Timed calls of the shards' turns, by the turn's seq: they become its children when it ends. */
  spans(records: readonly CallRecord[]): void;
  /** The entry node forwards a call: its span's `traceparent` travels with the call. */
  forwardSent(partition: number, owner: () => string | null): { traceparent: string; end(how: ForwardEnd): void };
  /** The owner runs a forwarded call, a child of the sender's span (`traceparent`, when it came with one). */
  forwardServed(partition: number, from: string, traceparent: string | null): { traceparent: string; end(how: ForwardEnd): void };
  /** Exports what is left; called at shutdown. */
  shutdown(): Promise<void>;
}

/** What a turn's span is made of (the ledger's OpenTurn has it all). */
export interface TracedTurn {
  seq: number;
  shard: number;
  req: { agent: string; guest: string | null; mode: string };
  openedAt: number;
  startedAt: number;
  traceparent?: string;
}

/** The process's tracing, or null while `otlp` is off. */
export const tracing = {
  now: null as Tracing | null,
  /**
   * Set while a forwarded call is handed to the local dispatch: the turn it
   * opens takes it as its parent (see TurnLedger.open).
   */
  remoteParent: null as string | null,
};

/** Runs `fn` with `traceparent` as the parent of any turn it opens (a forwarded call's turn). */
export function withRemoteParent<T>(traceparent: string | null, fn: () => T): T {
  if (traceparent === null) return fn();
  tracing.remoteParent = traceparent;
  try {
    return fn();
  } finally {
    tracing.remoteParent = null;
  }
}
