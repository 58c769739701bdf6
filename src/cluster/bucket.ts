/**
 * The cluster's JetStream key-value bucket as a thing that can go away: bound
 * (made when missing) with the epoch the store issued it, and a failure of it
 * told apart as the bucket gone (NATS restarted without its store), replaced
 * (made anew since this node last wrote), or NATS or JetStream not answering
 * for now (right after a restart JetStream takes a moment).
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { JetStreamApiCodes, JetStreamApiError, jetstreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { Logger } from '../shared/log.ts';

/** The key holding the epoch the store issued to this bucket (fences.ts): its claims carry it. */
export const EPOCH_KEY = 'epoch';

/** What a failed write or watch of the bucket means. */
export type BucketTrouble =
  | { kind: 'gone' }
  | { kind: 'replaced' }
  /** This node's heartbeat is not at the revision it last wrote, in a bucket still carrying its epoch (a write it timed out on was stored). */
  | { kind: 'out-of-step'; revision: number }
  | { kind: 'unavailable'; why: string }
  /** The bucket's stream is there: the failure was something else. */
  | { kind: 'other'; why: string };

const enc = new TextEncoder();

/** The epoch an entry of EPOCH_KEY holds, or null (none, deleted, or not one). */
export function epochIn(text: string | null): number | null {
  const n = text === null ? NaN : Number(text);
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

/**
 * Binds the bucket, making it when missing, and agrees its epoch with the
 * store: `epochOf` answers the epoch the bucket is to carry given the one it
 * carries; when that is another, this node writes it by compare-and-set, so
 * of nodes binding at once one writes and the others read it.
 */
export async function bindBucket(nc: NatsConnection, name: string, epochOf: (current: number | null) => Promise<number>): Promise<{ kv: KV; epoch: number }> {
  const kv = await new Kvm(nc).create(name, { history: 1 });
  for (let attempt = 0; attempt < 5; attempt++) {
    const entry = await kv.get(EPOCH_KEY);
    const current = entry !== null && entry.operation === 'PUT' ? epochIn(entry.string()) : null;
    const epoch = await epochOf(current);
    if (epoch === current) return { kv, epoch };
    try {
      if (entry === null) await kv.create(EPOCH_KEY, enc.encode(String(epoch)));
      else await kv.update(EPOCH_KEY, enc.encode(String(epoch)), entry.revision);
      return { kv, epoch };
    } catch (err) {
      if (!(err instanceof JetStreamApiError)) throw err;
      // Another node wrote the epoch first: read it again.
    }
  }
  throw new Error(`the epoch of NATS bucket ${name} kept changing while this node bound it`);
}

/** What a failed heartbeat found: its bucket, the epoch this node bound it with, and the heartbeat's key. */
export interface OwnKey {
  kv: KV;
  epoch: number;
  key: string;
}

/**
 * What `err`, from a write or watch of the bucket, means. `own`: it was this
 * node's heartbeat, a compare-and-set on the revision it last wrote: when
 * the bucket no longer carries the node's epoch, it was made anew; when it
 * does, the node's last write was stored after all (it timed out) and the
 * next heartbeat goes on from the revision found. Otherwise asks JetStream
 * whether the bucket's stream exists: a publish to a stream that is gone
 * fails as "jetstream is not enabled", as it does while JetStream starts.
 */
export async function diagnose(nc: NatsConnection, name: string, err: unknown, own: OwnKey | null): Promise<BucketTrouble> {
  if (err instanceof JetStreamApiError) {
    if (own !== null && err.code === JetStreamApiCodes.StreamWrongLastSequence) return outOfStep(own);
    if (err.code === JetStreamApiCodes.StreamNotFound) return { kind: 'gone' };
  }
  try {
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    await jsm.streams.info(`KV_${name}`);
  } catch (probe) {
    if (probe instanceof JetStreamApiError && probe.code === JetStreamApiCodes.StreamNotFound) return { kind: 'gone' };
    return { kind: 'unavailable', why: (probe as Error).message };
  }
  return { kind: 'other', why: (err as Error).message };
}

async function outOfStep({ kv, epoch, key }: OwnKey): Promise<BucketTrouble> {
  try {
    const [marked, beat] = await Promise.all([kv.get(EPOCH_KEY), kv.get(key)]);
    const carried = marked !== null && marked.operation === 'PUT' ? epochIn(marked.string()) : null;
    if (carried !== epoch || beat === null) return { kind: 'replaced' };
    return { kind: 'out-of-step', revision: beat.revision };
  } catch (err) {
    return { kind: 'unavailable', why: (err as Error).message };
  }
}

/**
 * A warning for each change of state rather than for each failure: a line
 * when trouble begins or changes kind, and one when it is over, rather than
 * one for each failed heartbeat or round.
 */
export class QuietWarnings {
  readonly #log: Logger;
  readonly #node: string;
  readonly #over: string;
  #state = 'ok';

  /** `over`: the line logged when the trouble is over. */
  constructor(log: Logger, node: string, over: string) {
    this.#log = log;
    this.#node = node;
    this.#over = over;
  }

  /** Trouble `state` (one warning while it lasts), `message` and `detail` saying what. */
  trouble(state: string, message: string, detail: Record<string, unknown> = {}): void {
    if (state === this.#state) return;
    this.#state = state;
    this.#log.warn({ node: this.#node, ...detail }, message);
  }

  ok(): void {
    if (this.#state === 'ok') return;
    this.#state = 'ok';
    this.#log.warn({ node: this.#node }, this.#over);
  }
}
