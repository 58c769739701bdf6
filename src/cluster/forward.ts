/**
 * Forwarding between cluster nodes over NATS (being built; nothing reaches
 * it yet): a request for a partition goes to the node serving it, and that
 * node's frames come back, in order, under flow control.
 *
 * The owner subscribes to `PREFIX.p.P` for each partition P it serves. The
 * entry node subscribes an inbox for the call's frames, then sends the
 * request to the partition's subject as a NATS request: the owner answers
 * at once with `accept` (its node name and a control subject of its own) or
 * `refuse` (it no longer serves P); no subscriber at all fails the call
 * straight away (NATS "no responders"). Then the owner publishes the call's
 * frames to the inbox, numbered from 1, and `end` after the last. At most
 * `window` frames may wait unacknowledged: the entry node acknowledges
 * frames once its consumer took them, and a consumer that cannot take more
 * (a slow client) holds the acknowledgements back, so the owner's `write`
 * answers false and it stops producing until `drain`. The entry node may
 * cancel the call on the control subject.
 *
 * Messages are small binary records: a type byte, then its fields.
 */
import { createInbox, RequestError, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { Logger } from '../shared/log.ts';

/** Frames a call may have unacknowledged when the entry node's side names no window. */
export const DEFAULT_WINDOW = 64;

/** How long the entry node waits for the owner's accept. */
const ACCEPT_TIMEOUT_MS = 5_000;

const enum Kind {
  Accept = 1,
  Refuse = 2,
  Frame = 3,
  End = 4,
  Ack = 16,
  Cancel = 17,
  /** A further piece of a request body too big for one NATS message, numbered from 1. */
  Body = 18,
}

/** Request bytes the NATS request itself carries; the rest follows in `Body` pieces once accepted (NATS's default max_payload is 1 MiB). */
export const REQUEST_PIECE_BYTES = 256 * 1024;

const enc = new TextEncoder();
const dec = new TextDecoder();

function record(kind: Kind, seq: number, tail: Uint8Array = new Uint8Array(0)): Uint8Array {
  const out = new Uint8Array(5 + tail.length);
  out[0] = kind;
  new DataView(out.buffer).setUint32(1, seq);
  out.set(tail, 5);
  return out;
}

function parse(data: Uint8Array): { kind: Kind; seq: number; tail: Uint8Array } {
  if (data.length < 5) throw new Error(`a forwarding record of ${data.length} bytes is too short`);
  return { kind: data[0] as Kind, seq: new DataView(data.buffer, data.byteOffset, data.byteLength).getUint32(1), tail: data.subarray(5) };
}

interface RequestHead {
  /** Where the call's frames go. */
  inbox: string;
  /** The entry node. */
  node: string;
  /** The request body's whole length: more than the request carries means `Body` pieces follow. */
  size: number;
}

/** A request: the window (u32 in `seq`), then its head's length (u16), the head (JSON), and the request's bytes. */
function requestRecord(window: number, head: RequestHead, body: Uint8Array): Uint8Array {
  const name = enc.encode(JSON.stringify(head));
  const tail = new Uint8Array(2 + name.length + body.length);
  new DataView(tail.buffer).setUint16(0, name.length);
  tail.set(name, 2);
  tail.set(body, 2 + name.length);
  return record(Kind.Accept, window, tail);
}

function parseRequest(data: Uint8Array): RequestHead & { window: number; body: Uint8Array } {
  const { seq, tail } = parse(data);
  if (tail.length < 2) throw new Error('no request head');
  const length = new DataView(tail.buffer, tail.byteOffset, tail.byteLength).getUint16(0);
  const head = JSON.parse(dec.decode(tail.subarray(2, 2 + length))) as RequestHead;
  if (typeof head.inbox !== 'string' || typeof head.node !== 'string' || !Number.isSafeInteger(head.size)) throw new Error('a request head without inbox, node or size');
  const body = tail.subarray(2 + length);
  if (body.length > head.size) throw new Error(`a request of ${body.length} bytes announced as ${head.size}`);
  return { window: seq, inbox: head.inbox, node: head.node, size: head.size, body };
}

export const partitionSubject = (prefix: string, partition: number): string => `${prefix}.p.${partition}`;

/** The owner's side of one forwarded call. */
export interface ForwardReply {
  /** Sends a frame; false once `window` frames wait for acknowledgement (write more after `onDrain`'s callback). */
  write(frame: Uint8Array): boolean;
  /** Sends `end`: the call's last frame was written. */
  end(): void;
  /** Called once the entry node acknowledged frames while writes were held back. */
  onDrain(cb: () => void): void;
  /** Called if the entry node cancels the call (its client left). */
  onCancel(cb: () => void): void;
}

/**
 * The owner's side: serves the partitions it is told to, handing each
 * request's bytes and a reply to `handle`.
 */
export class ForwardServer {
  readonly #nc: NatsConnection;
  readonly #prefix: string;
  readonly #node: string;
  readonly #handle: (partition: number, body: Uint8Array, reply: ForwardReply) => void;
  readonly #log: Logger;
  readonly #subs = new Map<number, Subscription>();
  /** Cancels of the calls under way, by entry node. */
  readonly #calls = new Map<string, Set<() => void>>();

  constructor(nc: NatsConnection, prefix: string, node: string, handle: (partition: number, body: Uint8Array, reply: ForwardReply) => void, log: Logger) {
    this.#nc = nc;
    this.#prefix = prefix;
    this.#node = node;
    this.#handle = handle;
    this.#log = log;
  }

  /** Takes requests for `partition` from now on. */
  serve(partition: number): void {
    if (this.#subs.has(partition)) return;
    this.#subs.set(partition, this.#nc.subscribe(partitionSubject(this.#prefix, partition), { callback: (err, msg) => (err === null ? this.#accept(partition, msg) : undefined) }));
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

  /** Cancels every call `node` sent that has not ended: it left or died, and no one reads their frames. */
  entryLost(node: string): void {
    for (const cancel of [...(this.#calls.get(node) ?? [])]) cancel();
  }

  /** Calls under way. */
  get size(): number {
    let n = 0;
    for (const calls of this.#calls.values()) n += calls.size;
    return n;
  }

  #accept(partition: number, msg: Msg): void {
    let request: ReturnType<typeof parseRequest>;
    try {
      request = parseRequest(msg.data);
    } catch (err) {
      msg.respond(record(Kind.Refuse, 0, enc.encode(`a malformed forwarded request: ${(err as Error).message}`)));
      return;
    }
    if (!this.#subs.has(partition)) {
      msg.respond(record(Kind.Refuse, 0, enc.encode(`node ${this.#node} no longer serves partition ${partition}`)));
      return;
    }
    const control = createInbox();
    const window = Math.max(1, request.window);
    let sent = 0;
    let acked = 0;
    let held = false;
    let finished = false;
    let drain: (() => void) | null = null;
    let cancel: (() => void) | null = null;
    const calls = this.#calls.get(request.node) ?? new Set<() => void>();
    this.#calls.set(request.node, calls);
    const close = (): void => {
      sub.unsubscribe();
      calls.delete(cancelled);
      if (calls.size === 0 && this.#calls.get(request.node) === calls) this.#calls.delete(request.node);
    };
    const cancelled = (): void => {
      const wasOpen = !finished;
      finished = true;
      close();
      if (wasOpen) cancel?.();
    };
    calls.add(cancelled);
    // A body bigger than one message: its pieces come on the control subject, in order; the call runs once it is whole.
    let body: Uint8Array | null = request.body.length === request.size ? request.body : null;
    const pieces: Uint8Array[] = body === null ? [Uint8Array.from(request.body)] : [];
    let have = request.body.length;
    const sub = this.#nc.subscribe(control, {
      callback: (err, m) => {
        if (err !== null) return;
        const { kind, seq, tail } = parse(m.data);
        if (kind === Kind.Cancel) return cancelled();
        if (kind === Kind.Body) {
          if (body !== null || finished || seq !== pieces.length) return;
          pieces.push(Uint8Array.from(tail));
          have += tail.length;
          if (have < request.size) return;
          body = Buffer.concat(pieces);
          run(body);
          return;
        }
        if (kind !== Kind.Ack || seq <= acked) return;
        acked = seq;
        if (finished && acked === sent) close();
        if (held && sent - acked < window) {
          held = false;
          drain?.();
        }
      },
    });
    const reply: ForwardReply = {
      write: (frame) => {
        if (finished) return false;
        this.#nc.publish(request.inbox, record(Kind.Frame, ++sent, frame));
        held = sent - acked >= window;
        return !held;
      },
      end: () => {
        if (finished) return;
        finished = true;
        this.#nc.publish(request.inbox, record(Kind.End, sent));
        if (acked === sent) close();
      },
      onDrain: (cb) => (drain = cb),
      onCancel: (cb) => (cancel = cb),
    };
    const run = (bytes: Uint8Array): void => {
      try {
        this.#handle(partition, bytes, reply);
      } catch (err) {
        this.#log.warn({ err: (err as Error).message, partition }, 'a forwarded request failed in its handler');
        reply.end();
      }
    };
    msg.respond(record(Kind.Accept, 0, enc.encode(JSON.stringify({ node: this.#node, control }))));
    if (body !== null) run(body);
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
  /** A frame, in order. Return false to hold further frames back (a slow client) until `call.resume()`. */
  frame(bytes: Uint8Array): boolean;
  end(): void;
  fail(err: ForwardError): void;
}

/** The entry node's handle on a call under way. */
export interface ForwardCall {
  /** The node that accepted the call (null until it has). */
  readonly owner: string | null;
  /** The consumer can take frames again: acknowledges what it took. */
  resume(): void;
  /** The client left: tells the owner, and delivers nothing more. */
  cancel(): void;
}

/** The entry node's side: sends requests to partition owners and hands their frames back in order. */
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
    const c = new Call(this.#nc, this.#window, handlers, () => this.#calls.delete(c));
    this.#calls.add(c);
    c.begin(partitionSubject(this.#prefix, partition), partition, this.#node, body);
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

class Call implements ForwardCall {
  owner: string | null = null;
  readonly #nc: NatsConnection;
  readonly #window: number;
  readonly #h: ForwardHandlers;
  readonly #done: () => void;
  #inbox: Subscription | null = null;
  #control: string | null = null;
  #received = 0;
  #acked = 0;
  #paused = false;
  #over = false;
  /** Frames that arrived before the accept (NATS orders one publisher's messages, but the accept travels as a reply). */
  #early: Uint8Array[] = [];

  constructor(nc: NatsConnection, window: number, handlers: ForwardHandlers, done: () => void) {
    this.#nc = nc;
    this.#window = window;
    this.#h = handlers;
    this.#done = done;
  }

  begin(subject: string, partition: number, node: string, body: Uint8Array): void {
    const inbox = createInbox();
    this.#inbox = this.#nc.subscribe(inbox, { callback: (err, msg) => (err === null ? this.#onMessage(msg.data) : undefined) });
    const first = body.subarray(0, REQUEST_PIECE_BYTES);
    this.#nc.request(subject, requestRecord(this.#window, { inbox, node, size: body.length }, first), { timeout: ACCEPT_TIMEOUT_MS }).then(
      (msg) => {
        const { kind, tail } = parse(msg.data);
        if (kind === Kind.Refuse) return this.fail(new ForwardError('unserved', dec.decode(tail)));
        const { node, control } = JSON.parse(dec.decode(tail)) as { node: string; control: string };
        this.owner = node;
        this.#control = control;
        if (this.#over) return this.#nc.publish(control, record(Kind.Cancel, 0));
        for (let at = first.length, n = 1; at < body.length; at += REQUEST_PIECE_BYTES, n++) {
          this.#nc.publish(control, record(Kind.Body, n, body.subarray(at, at + REQUEST_PIECE_BYTES)));
        }
        for (const data of this.#early.splice(0)) this.#onMessage(data);
      },
      (err: unknown) => {
        // No subscriber: no node took the call, so it may be sent again. A timeout is not that: a slow owner may have taken it.
        if (err instanceof RequestError && err.isNoResponders()) return this.fail(new ForwardError('unserved', `no node serves partition ${partition} now`));
        this.fail(new ForwardError('lost', `the node serving partition ${partition} did not answer within ${ACCEPT_TIMEOUT_MS} ms (${(err as Error).message}); whether it ran the request is unknown`));
      },
    );
  }

  #onMessage(data: Uint8Array): void {
    if (this.#over) return;
    if (this.#control === null) {
      this.#early.push(data);
      return;
    }
    const { kind, seq, tail } = parse(data);
    if (kind === Kind.Frame) {
      if (seq !== this.#received + 1) return this.fail(new ForwardError('lost', `frame ${seq} of a forwarded call arrived after frame ${this.#received}: frames were lost`));
      this.#received = seq;
      if (!this.#h.frame(tail)) this.#paused = true;
      if (!this.#paused && this.#received - this.#acked >= Math.ceil(this.#window / 2)) this.#ack();
      return;
    }
    if (kind === Kind.End) {
      if (seq !== this.#received) return this.fail(new ForwardError('lost', `a forwarded call ended after ${seq} frames, ${this.#received} of which arrived`));
      this.#ack();
      this.#finish();
      this.#h.end();
    }
  }

  #ack(): void {
    if (this.#control === null || this.#acked === this.#received) return;
    this.#acked = this.#received;
    this.#nc.publish(this.#control, record(Kind.Ack, this.#acked));
  }

  resume(): void {
    if (this.#over || !this.#paused) return;
    this.#paused = false;
    this.#ack();
  }

  cancel(): void {
    if (this.#over) return;
    if (this.#control !== null) this.#nc.publish(this.#control, record(Kind.Cancel, 0));
    this.#finish();
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
