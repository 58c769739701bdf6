/**
 * Forwarding between cluster nodes over NATS: a request for a partition
 * goes to the node serving it, and that node's replies come back, in order,
 * under flow control.
 *
 * The owner subscribes to `PREFIX.p.P` for each partition P it serves. The
 * entry node subscribes an inbox for the call's replies, then sends a `call`
 * to the partition's subject as a NATS request: the owner answers at once
 * with `accept` (its node name and a control subject of its own) or `refuse`
 * (it no longer serves P); no subscriber at all fails the call straight away
 * (NATS "no responders"). Request and replies travel in pieces (chunks.ts):
 * the call carries the request's first piece, and `body` messages on the
 * control subject the rest; each reply the owner writes goes to the inbox as
 * `frame` pieces numbered from 1, and `end` follows the last. At most
 * `window` pieces may wait unacknowledged: the entry node acknowledges
 * pieces once its consumer took them, and a consumer that cannot take more
 * (a slow client) holds the acknowledgements back, so the owner's pieces
 * wait and its `write` answers false until `drain`. The entry node may
 * cancel the call on the control subject. Every message is in messages.ts.
 */
import { createInbox, headers, RequestError, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { Logger } from '../shared/log.ts';
import { PieceJoiner, piecesOf, type Piece } from './chunks.ts';
import { decodeMessage, encodeMessage, type Message } from './messages.ts';
import { OwnerCall, type ForwardReply } from './owner-call.ts';
import { mainMeter, type ForwardStatus } from '../main/metrics/main-meter.ts';
import { tracing, withRemoteParent, type ForwardEnd } from '../main/traces/tracing-state.ts';

/** The NATS header a forwarded call's trace context travels in (W3C trace context). */
const TRACEPARENT = 'traceparent';
type ForwardSpan = { traceparent: string; end(how: ForwardEnd): void };

/** Pieces a call may have unacknowledged when the entry node's side names no window. */
export const DEFAULT_WINDOW = 64;

/** How long the entry node waits for the owner's accept. */
const ACCEPT_TIMEOUT_MS = 5_000;

export const partitionSubject = (prefix: string, partition: number): string => `${prefix}.p.${partition}`;

export type { ForwardReply } from './owner-call.ts';

type Handler = (partition: number, body: Uint8Array, reply: ForwardReply) => void;

/**
 * The owner's side: serves the partitions it is told to, handing each
 * request's bytes and a reply to `handle`.
 */
export class ForwardServer {
  readonly #nc: NatsConnection;
  readonly #prefix: string;
  readonly #node: string;
  readonly #handle: Handler;
  readonly #log: Logger;
  readonly #subs = new Map<number, Subscription>();
  /** The calls under way, by entry node. */
  readonly #calls = new Map<string, Set<OwnerCall>>();

  constructor(nc: NatsConnection, prefix: string, node: string, handle: Handler, log: Logger) {
    this.#nc = nc;
    this.#prefix = prefix;
    this.#node = node;
    this.#handle = handle;
    this.#log = log;
  }

  /** Takes requests for `partition` from now on. */
  serve(partition: number): void {
    if (this.#subs.has(partition)) return;
    this.#subs.set(partition, this.#nc.subscribe(partitionSubject(this.#prefix, partition), {
      callback: (err, msg) => (err === null ? this.#accept(partition, msg.data, (b) => msg.respond(b), msg.headers?.get(TRACEPARENT) || null) : undefined),
    }));
  }

  /** Takes no new request for `partition` (calls under way run on; the store's fence refuses their writes once it moved). */
  unserve(partition: number): void {
    const sub = this.#subs.get(partition);
    this.#subs.delete(partition);
    // Drained, not dropped: a request NATS delivered before it saw the unsubscribe still gets its answer (refused, so
    // the entry node knows for sure it did not run here) instead of waiting out the accept timeout.
    sub?.drain().catch(() => undefined);
  }

  close(): void {
    for (const p of [...this.#subs.keys()]) this.unserve(p);
  }

  /** Cancels every call `node` sent that has not ended: it left or died, and no one reads their replies. */
  entryLost(node: string): void {
    for (const call of [...(this.#calls.get(node) ?? [])]) call.cancel();
  }

  /** Calls under way. */
  get size(): number {
    let n = 0;
    for (const calls of this.#calls.values()) n += calls.size;
    return n;
  }

  #accept(partition: number, data: Uint8Array, respond: (answer: Uint8Array) => void, traceparent: string | null): void {
    let request: Message<'call'>;
    try {
      request = decodeMessage(data, 'call');
    } catch (err) {
      return void respond(encodeMessage({ t: 'refuse', reason: `a malformed forwarded request: ${(err as Error).message}` }));
    }
    if (!this.#subs.has(partition)) return void respond(encodeMessage({ t: 'refuse', reason: `node ${this.#node} no longer serves partition ${partition}` }));
    const calls = this.#calls.get(request.node) ?? new Set<OwnerCall>();
    this.#calls.set(request.node, calls);
    // Traces: the call's span here is a child of the sender's, and the turn it runs a child of this one.
    const span = tracing.now?.forwardServed(partition, request.node, traceparent) ?? null;
    const call = new OwnerCall(this.#nc, request, {
      run: (body) => withRemoteParent(span?.traceparent ?? null, () => this.#run(partition, body, call)),
      forget: () => {
        span?.end('ok');
        calls.delete(call);
        if (calls.size === 0 && this.#calls.get(request.node) === calls) this.#calls.delete(request.node);
      },
      log: this.#log,
    });
    calls.add(call);
    respond(encodeMessage({ t: 'accept', node: this.#node, control: call.control }));
    call.take(request);
  }

  #run(partition: number, body: Uint8Array, reply: ForwardReply): void {
    try {
      this.#handle(partition, body, reply);
    } catch (err) {
      this.#log.warn({ err: (err as Error).message, partition }, 'a forwarded request failed in its handler');
      reply.end();
    }
  }
}

/** Why a forwarded call failed: `unserved` (no node took it: safe to retry once ownership settles) or `lost` (its owner went away mid-call, or never answered: it may have run). */
export class ForwardError extends Error {
  readonly reason: 'unserved' | 'lost';
  constructor(reason: 'unserved' | 'lost', message: string) {
    super(message);
    this.reason = reason;
  }
}

export interface ForwardHandlers {
  /** A reply, whole and in order. Return false to hold further replies back (a slow client) until `call.resume()`. */
  frame(bytes: Uint8Array): boolean;
  end(): void;
  fail(err: ForwardError): void;
}

/** The entry node's handle on a call under way. */
export interface ForwardCall {
  /** The node that accepted the call (null until it has). */
  readonly owner: string | null;
  /** The consumer can take replies again: acknowledges what it took. */
  resume(): void;
  /** The client left: tells the owner, and delivers nothing more. */
  cancel(): void;
}

/** The entry node's side: sends requests to partition owners and hands their replies back in order. */
export class ForwardClient {
  readonly #nc: NatsConnection;
  readonly #prefix: string;
  readonly #node: string;
  readonly #window: number;
  readonly #calls = new Set<Call>();

  constructor(nc: NatsConnection, prefix: string, node: string, window = DEFAULT_WINDOW) {
    this.#nc = nc;
    this.#prefix = prefix;
    this.#node = node;
    this.#window = window;
  }

  call(partition: number, body: Uint8Array, handlers: ForwardHandlers): ForwardCall {
    const span = tracing.now?.forwardSent(partition, () => c.owner) ?? null;
    const watched = mainMeter.timings === null && span === null ? null : timed(handlers, span);
    const c: Call = new Call(this.#nc, this.#window, watched?.handlers ?? handlers, () => this.#calls.delete(c));
    c.onCancel = watched?.cancelled ?? null;
    this.#calls.add(c);
    c.begin(partitionSubject(this.#prefix, partition), partition, this.#node, body, span?.traceparent ?? null);
    return c;
  }

  /** Fails every call `node` accepted and has not ended: the node left or died. */
  ownerLost(node: string, why: string): void {
    for (const c of [...this.#calls]) if (c.owner === node) c.fail(new ForwardError('lost', why));
  }

  /** Calls under way. */
  get size(): number {
    return this.#calls.size;
  }
}

/**
 * Handlers that count the call's end and its time (the metrics) and end its
 * span (the traces); a cancelled call ends with neither end nor fail, so
 * Call.cancel calls `cancelled`.
 */
function timed(h: ForwardHandlers, span: ForwardSpan | null): { handlers: ForwardHandlers; cancelled(): void } {
  const began = performance.now();
  let counted = false;
  const count = (status: ForwardStatus): void => {
    if (counted) return;
    counted = true;
    mainMeter.timings?.forwarded(status, (performance.now() - began) / 1000);
    span?.end(status);
  };
  const handlers: ForwardHandlers = {
    frame: (bytes) => h.frame(bytes),
    end: () => {
      count('ok');
      h.end();
    },
    fail: (err) => {
      count(err.reason);
      h.fail(err);
    },
  };
  return { handlers, cancelled: () => count('cancelled') };
}

/** One call at its entry node: the request's pieces out, the replies' pieces in, acknowledged as its consumer takes them. */
class Call implements ForwardCall {
  owner: string | null = null;
  /** Counts and ends the call's span when the client cancels it (the metrics, the traces). */
  onCancel: (() => void) | null = null;
  readonly #nc: NatsConnection;
  readonly #window: number;
  readonly #h: ForwardHandlers;
  readonly #done: () => void;
  readonly #replies = new PieceJoiner();
  #inbox: Subscription | null = null;
  #control: string | null = null;
  #received = 0;
  #acked = 0;
  #paused = false;
  #over = false;
  /** Messages that arrived before the accept (NATS orders one publisher's messages, but the accept travels as a reply). */
  #early: Uint8Array[] = [];

  constructor(nc: NatsConnection, window: number, handlers: ForwardHandlers, done: () => void) {
    this.#nc = nc;
    this.#window = window;
    this.#h = handlers;
    this.#done = done;
  }

  begin(subject: string, partition: number, node: string, body: Uint8Array, traceparent: string | null): void {
    const inbox = createInbox();
    this.#inbox = this.#nc.subscribe(inbox, { callback: (err, msg) => (err === null ? this.#onMessage(msg.data) : undefined) });
    const [first, ...rest] = piecesOf(body);
    const h = traceparent === null ? undefined : headers();
    h?.set(TRACEPARENT, traceparent!);
    this.#nc.request(subject, encodeMessage({ t: 'call', window: this.#window, inbox, node, ...first! }), { timeout: ACCEPT_TIMEOUT_MS, ...(h === undefined ? {} : { headers: h }) }).then(
      (msg) => this.#answered(msg.data, rest),
      (err: unknown) => {
        // No subscriber: no node took the call, so it may be sent again. A timeout is not that: a slow owner may have taken it.
        if (err instanceof RequestError && err.isNoResponders()) return this.fail(new ForwardError('unserved', `no node serves partition ${partition} now`));
        this.fail(new ForwardError('lost', `the node serving partition ${partition} did not answer within ${ACCEPT_TIMEOUT_MS} ms (${(err as Error).message}); whether it ran the request is unknown`));
      },
    );
  }

  /** The owner's answer: refused, or accepted (the rest of the request follows, then any replies that came early). */
  #answered(data: Uint8Array, rest: Piece[]): void {
    let answer: Message<'accept' | 'refuse'>;
    try {
      answer = decodeMessage(data, 'accept', 'refuse');
    } catch (err) {
      return this.fail(new ForwardError('lost', `the node serving this partition answered with ${(err as Error).message}; whether it ran the request is unknown`));
    }
    if (answer.t === 'refuse') return this.fail(new ForwardError('unserved', answer.reason));
    this.owner = answer.node;
    this.#control = answer.control;
    if (this.#over) return this.#nc.publish(answer.control, encodeMessage({ t: 'cancel' }));
    for (const piece of rest) this.#nc.publish(answer.control, encodeMessage({ t: 'body', ...piece }));
    for (const data of this.#early.splice(0)) this.#onMessage(data);
  }

  #onMessage(data: Uint8Array): void {
    if (this.#over) return;
    if (this.#control === null) {
      this.#early.push(data);
      return;
    }
    let m: Message<'frame' | 'end'>;
    try {
      m = decodeMessage(data, 'frame', 'end');
    } catch (err) {
      return this.fail(new ForwardError('lost', `the node serving this call sent ${(err as Error).message}`));
    }
    if (m.t === 'frame') return this.#onPiece(m);
    if (m.seq !== this.#received) return this.fail(new ForwardError('lost', `a forwarded call ended after ${m.seq} pieces, ${this.#received} of which arrived`));
    this.#ack();
    this.#finish();
    this.#h.end();
  }

  #onPiece(m: Message<'frame'>): void {
    if (m.seq !== this.#received + 1) return this.fail(new ForwardError('lost', `piece ${m.seq} of a forwarded call arrived after piece ${this.#received}: pieces were lost`));
    this.#received = m.seq;
    let reply: Uint8Array | null;
    try {
      reply = this.#replies.push(m);
    } catch (err) {
      return this.fail(new ForwardError('lost', `a forwarded call's replies arrived out of order: ${(err as Error).message}`));
    }
    if (reply !== null && !this.#h.frame(reply)) this.#paused = true;
    if (!this.#paused && this.#received - this.#acked >= Math.ceil(this.#window / 2)) this.#ack();
  }

  #ack(): void {
    if (this.#control === null || this.#acked === this.#received) return;
    this.#acked = this.#received;
    this.#nc.publish(this.#control, encodeMessage({ t: 'ack', seq: this.#acked }));
  }

  resume(): void {
    if (this.#over || !this.#paused) return;
    this.#paused = false;
    this.#ack();
  }

  cancel(): void {
    if (this.#over) return;
    if (this.#control !== null) this.#nc.publish(this.#control, encodeMessage({ t: 'cancel' }));
    this.#finish();
    this.onCancel?.();
  }

  fail(err: ForwardError): void {
    if (this.#over) return;
    this.#finish();
    this.#h.fail(err);
  }

  #finish(): void {
    this.#over = true;
    this.#inbox?.unsubscribe();
    this.#done();
  }
}
