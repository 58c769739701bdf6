/**
 * Request/reply between threads where comlink's cost is not acceptable.
 * comlink (the harness host's channel) is used wherever a call is off the
 * hot path; it gives no way to cancel a call, wraps every message in its own
 * envelope and keeps no deadline. The channels here need what it lacks: a
 * turn's cancellation must reach the other side at once (MCP calls, harness
 * tools), a turn's commit is on the per-turn path (the turn writer), and a
 * reply may ride in a batch the channel shares with other traffic (the shard
 * pool's queries). So each keeps its own message shapes and transport, and
 * all of them share this bookkeeping: ids, the calls waiting on them, their
 * time limits, and failing every one of them when the other side is gone.
 */
import type { MessagePort } from 'node:worker_threads';

/** A time limit on one call: `onExpiry` decides what happens (reject it, or stop the thread). */
export interface CallTimeout {
  ms: number;
  onExpiry(id: number): void;
  /** The timer does not keep the process alive (default: it does, like the call it guards). */
  unref?: boolean;
}

interface Waiting<T, M> {
  meta: M;
  /** null once the caller stopped waiting (abandon): the entry and its timer still stand. */
  settle: { resolve(value: T): void; reject(err: Error): void } | null;
  timer: NodeJS.Timeout | null;
}

/** Calls waiting for a reply, by id, each with what its owner keeps about it (`meta`). */
export class PendingReplies<T, M = undefined> {
  readonly #waiting = new Map<number, Waiting<T, M>>();
  #nextId = 1;

  /** A fresh id and the promise its reply settles. */
  open(meta: M, timeout?: CallTimeout): { id: number; promise: Promise<T> } {
    const id = this.#nextId++;
    const promise = new Promise<T>((resolve, reject) => {
      this.#waiting.set(id, { meta, settle: { resolve, reject }, timer: null });
    });
    if (timeout !== undefined) this.retime(id, timeout);
    return { id, promise };
  }

  get size(): number {
    return this.#waiting.size;
  }

  meta(id: number): M | undefined {
    return this.#waiting.get(id)?.meta;
  }

  /** Whether the caller of `id` still waits for its reply. */
  awaited(id: number): boolean {
    return this.#waiting.get(id)?.settle != null;
  }

  /** Replaces the call's time limit (a limit that starts once the other side begins the work, say). */
  retime(id: number, timeout: CallTimeout): void {
    const w = this.#waiting.get(id);
    if (w === undefined) return;
    if (w.timer !== null) clearTimeout(w.timer);
    w.timer = setTimeout(() => timeout.onExpiry(id), timeout.ms);
    if (timeout.unref === true) w.timer.unref();
  }

  resolve(id: number, value: T): boolean {
    const w = this.#take(id);
    w?.settle?.resolve(value);
    return w !== undefined;
  }

  reject(id: number, err: Error): boolean {
    const w = this.#take(id);
    w?.settle?.reject(err);
    return w !== undefined;
  }

  /** The caller stops waiting, rejected with `err`; the call stays open (and timed) until its reply or its end. */
  abandon(id: number, err: Error): void {
    const w = this.#waiting.get(id);
    if (w?.settle == null) return;
    w.settle.reject(err);
    w.settle = null;
  }

  /** Every call still open gets `value` (a lost shard has no conversations to report, say). */
  resolveAll(value: T): void {
    for (const id of [...this.#waiting.keys()]) this.resolve(id, value);
  }

  /** The other side is gone: every call still open fails. */
  rejectAll(err: (id: number) => Error): void {
    for (const id of [...this.#waiting.keys()]) this.reject(id, err(id));
  }

  #take(id: number): Waiting<T, M> | undefined {
    const w = this.#waiting.get(id);
    if (w === undefined) return undefined;
    this.#waiting.delete(id);
    if (w.timer !== null) clearTimeout(w.timer);
    return w;
  }
}

/** A reply on a port: it names the request it answers. */
export interface Reply {
  id: number;
}

/**
 * Request/reply on one MessagePort: each request goes out with a fresh `id`,
 * each reply settles the request of its `id`, and once the port closes (or
 * `fail` is called) every request still waiting, and every later one, fails.
 */
export class PortRpc<Req extends object, Rep extends Reply> {
  readonly #port: MessagePort;
  readonly #pending = new PendingReplies<Rep>();
  #failed: Error | null = null;

  /** `closed`: the error of what waits when the port closes from the other side. */
  constructor(port: MessagePort, closed: () => Error) {
    this.#port = port;
    port.on('message', (reply: Rep) => this.#pending.resolve(reply.id, reply));
    port.on('close', () => this.fail(closed()));
  }

  /**
   * Posts `req` with a fresh id. When `signal` aborts, the request is rejected
   * at once with its reason, and `onAbort(id)` tells the other side.
   */
  request(req: Req, signal?: AbortSignal, onAbort?: (id: number) => void): Promise<Rep> {
    signal?.throwIfAborted();
    if (this.#failed !== null) return Promise.reject(this.#failed);
    const { id, promise } = this.#pending.open(undefined);
    if (signal !== undefined) {
      const abort = (): void => {
        this.#pending.reject(id, signal.reason instanceof Error ? signal.reason : new Error('cancelled'));
        onAbort?.(id);
      };
      signal.addEventListener('abort', abort, { once: true });
      const done = (): void => signal.removeEventListener('abort', abort);
      promise.then(done, done);
    }
    this.#port.postMessage({ ...req, id });
    return promise;
  }

  /** Posts a message that expects no reply (a cancel, say). */
  post(msg: object): void {
    this.#port.postMessage(msg);
  }

  /** Fails every request still waiting, and every later one, with `err` (the first failure stands). */
  fail(err: Error): void {
    if (this.#failed !== null) return;
    this.#failed = err;
    this.#pending.rejectAll(() => err);
  }

  /** Closes the port; what still waits fails with `err`. */
  close(err: Error): void {
    this.fail(err);
    this.#port.close();
  }
}
