/**
 * A cluster node inside the daemon: its NATS connection, its partition
 * leases (leases.ts) and the forwarding of pair-addressed requests to the
 * partitions' owners (forward.ts).
 *
 * Every request addressed to a pair (`PAIR_OPS`) is routed by the pair's
 * partition: served here when this node holds the partition's lease, else
 * sent to the partition's subject, where its owner runs it through its own
 * local dispatch under a stand-in connection (`ForwardedRequest`) and sends
 * its frames back; the entry node writes them to the client's connection as
 * they are (the owner answers under the client's own request id). While no
 * node serves the partition (it changes hands) the request is held and tried
 * again, up to `holdMs`. The shards learn the tokens this node holds through
 * a SharedFences buffer, so their PostgreSQL writes are fenced.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { decodeBody, encodeBody, FLAG_LAST, frameOf, HEADER_BYTES, utf8Text } from '../shared/codec.ts';
import { FRAME_FLAGS_OFFSET } from '../shared/byte-layouts.ts';
import { withoutPassword } from '../shared/redact.ts';
import { Code } from '../shared/errors.ts';
import { isPlainMap } from '../shared/args.ts';
import type { ClusterSettings } from '../shared/config.ts';
import type { Logger } from '../shared/log.ts';
import type { ClusterStats } from '../shared/wire/ops.ts';
import { partitionOf, SharedFences } from '../shared/partitions.ts';
import type { Dispatch, Requester } from '../main/dispatch.ts';
import type { ShardPool } from '../main/hosts/shard-pool.ts';
import type { StoragePool } from '../main/hosts/storage-pool.ts';
import { ContentBytes } from '../main/net/request-body.ts';
import { ForwardClient, ForwardError, ForwardServer, type ForwardCall, type ForwardReply } from './forward.ts';
import { LeaseManager } from './leases.ts';

/** The operations addressed to one pair (`agent`, `sender`): each runs at the pair's owner. */
export const PAIR_OPS: ReadonlySet<string> = new Set(['stream', 'send', 'kill', 'compact', 'get_conversation_history', 'delete_conversation']);

/** Stand-in connection ids of forwarded requests: above any socket connection's (they count from 1). */
const FORWARDED_ID_BASE = 0x8000_0000;

export interface ClusterOptions {
  settings: ClusterSettings;
  log: Logger;
}

/** What the node routes with, once the daemon's parts exist. */
export interface ClusterParts {
  pool: ShardPool;
  storage: StoragePool;
  /** This node's own dispatch: what a request served here goes to. */
  local: Dispatch;
  defaultSender: string;
  /** A client connection past this many queued bytes holds its forwarded frames back. */
  highWaterBytes: number;
  /** A forwarded call whose frames pile up past this at its owner (the entry node stopped taking them) is cut. */
  hardLimitBytes: number;
  /** True once shutdown began: requests go to the local dispatch, which refuses them with 503. */
  closing(): boolean;
}

/** How often a node checks for nodes gone (their calls fail) and a held request tries again, as a share of the lease. */
const CHECKS_PER_LEASE = 10;

export class ClusterNode {
  readonly settings: ClusterSettings;
  readonly fences: SharedFences;
  readonly #nc: NatsConnection;
  readonly #log: Logger;
  #parts: ClusterParts | null = null;
  #leases: LeaseManager | null = null;
  #server: ForwardServer | null = null;
  #client: ForwardClient | null = null;
  /** Stand-in connections of the calls this node serves for others, by id. */
  readonly #forwarded = new Map<number, ForwardedRequest>();
  #nextForwardedId = FORWARDED_ID_BASE;
  /** What each client connection has under way elsewhere (calls, held requests): cancelled when it closes. */
  readonly #pending = new Map<number, Set<{ cancel(): void }>>();
  #live = new Set<string>();
  #checkTimer: NodeJS.Timeout | null = null;
  /** Requests forwarded from here, served here for others, and held while a partition changed hands. */
  readonly counts = { forwarded: 0, served_for_others: 0, held: 0 };

  private constructor(settings: ClusterSettings, nc: NatsConnection, log: Logger) {
    this.settings = settings;
    this.#nc = nc;
    this.#log = log;
    this.fences = new SharedFences(settings.partitions);
  }

  /** Connects to NATS (a clear error when no server answers); serves nothing until `start`. */
  static async connect(o: ClusterOptions): Promise<ClusterNode> {
    let nc: NatsConnection;
    try {
      nc = await connect({ servers: o.settings.nats, name: `agentd-${o.settings.node}`, maxReconnectAttempts: -1 });
    } catch (err) {
      throw new Error(`cluster: cannot reach NATS at ${o.settings.nats.map(withoutPassword).join(', ')}: ${(err as Error).message}`);
    }
    return new ClusterNode(o.settings, nc, o.log);
  }

  get #holdMs(): number {
    return 2 * this.settings.lease_ms + 1_000;
  }

  /** How long a request (or a fired subscription) waits for its partition's owner. */
  get holdMs(): number {
    return this.#holdMs;
  }

  /** The NATS connection (the agents' and the bus's messages share it). */
  get nc(): NatsConnection {
    return this.#nc;
  }

  /** Whether this node holds the partition's lease now. */
  holds(partition: number): boolean {
    return this.#leases?.tokenOf(partition) != null;
  }

  /** The nodes whose leases are live (this one included). */
  liveNodes(): string[] {
    return this.#leases?.liveNodes() ?? [this.settings.node];
  }

  /** Joins the cluster: leases, then serving the partitions gained. */
  async start(parts: ClusterParts): Promise<void> {
    this.#parts = parts;
    const { settings } = this;
    const prefix = `${settings.name}.fwd`;
    this.#server = new ForwardServer(this.#nc, prefix, settings.node, (p, body, reply) => this.#serveForwarded(p, body, reply), this.#log);
    this.#client = new ForwardClient(this.#nc, prefix, settings.node);
    const leases = new LeaseManager({
      nc: this.#nc,
      node: settings.node,
      partitions: settings.partitions,
      leaseMs: settings.lease_ms,
      bucket: settings.name,
      claim: (partition, token) => parts.storage.run<boolean>({ op: 'claim_partition', partition, token }),
      // Handing a partition over: its turns here end first (up to a lease; past that the store's fence refuses their writes).
      // The token stays in the shards' fences meanwhile, so those turns still store what they did.
      drain: (partition) =>
        parts.pool
          .dropPartition(partition, settings.partitions, settings.lease_ms)
          .catch((err: unknown) => this.#log.warn({ partition, err: (err as Error).message }, 'cluster partition handed over with turns still running here'))
          .finally(() => this.fences.set(partition, null)),
      log: this.#log,
    });
    this.#leases = leases;
    leases.on('renewed', (until) => this.fences.setValidUntil(until));
    leases.on('gained', (p, token) => {
      this.fences.set(p, token);
      if (!this.#leaving) this.#server!.serve(p);
    });
    leases.on('lost', (p, reason) => {
      this.#server?.unserve(p);
      // A rebalance drains the partition before releasing it (drain above); any other loss (lease, taken, stop) ends its writes now.
      if (reason === 'rebalance') return;
      this.fences.set(p, null);
      void parts.pool.dropPartition(p, settings.partitions, settings.lease_ms).catch(() => undefined);
    });
    await leases.start();
    this.#live = new Set(leases.liveNodes());
    this.#checkTimer = setInterval(() => this.#checkNodes(), settings.lease_ms / CHECKS_PER_LEASE);
  }

  /** Calls to or from nodes whose lease ran out fail (their owner) or are cancelled (their entry node). */
  #checkNodes(): void {
    const live = new Set(this.#leases!.liveNodes());
    for (const node of this.#live) {
      if (live.has(node) || node === this.settings.node) continue;
      this.#log.warn({ node }, 'cluster node gone: its forwarded calls end');
      this.#client!.ownerLost(node, `cluster node ${node} failed (its lease ran out) while serving this request; whether the turn was stored is unknown: read the conversation's history`);
      this.#server!.entryLost(node);
    }
    this.#live = live;
  }

  /** For get_stats: this node, the live nodes it sees, what it serves, and its forwarding counts since start. */
  stats(): ClusterStats {
    const leases = this.#leases;
    return {
      name: this.settings.name,
      node: this.settings.node,
      partitions: this.settings.partitions,
      lease_ms: this.settings.lease_ms,
      live_nodes: leases?.liveNodes() ?? [],
      nodes: leases?.nodeStats() ?? [],
      unowned_partitions: leases?.owners().filter((o) => o === null).length ?? this.settings.partitions,
      served_partitions: leases?.served().length ?? 0,
      lease_left_ms: leases?.leaseLeftMs() ?? 0,
      ...this.counts,
    };
  }

  /** The stand-in connection of a forwarded call, for the shards' frames. */
  forwarded(conn: number): { write(frames: Uint8Array): void } | undefined {
    return this.#forwarded.get(conn);
  }

  /** The dispatch clients' requests go through: pair operations to their owners, the rest here. */
  readonly route: Dispatch = (from, req, body) => {
    const parts = this.#parts!;
    const pair = pairOf(body, parts.defaultSender);
    if (pair === null || parts.closing()) return parts.local(from, req, body);
    const partition = partitionOf(pair.agent, pair.sender, this.settings.partitions);
    this.#routeTo(from, req, body, partition, performance.now() + this.#holdMs);
  };

  #routeTo(from: Requester, req: number, body: Record<string, unknown>, partition: number, deadline: number): void {
    const parts = this.#parts!;
    if (this.#leases!.tokenOf(partition) !== null) return parts.local(from, req, body);
    const pending = this.#pendingOf(from.id);
    let call: ForwardCall | null = null;
    let resumeTimer: NodeJS.Timeout | null = null;
    const entry = {
      cancel: () => {
        if (resumeTimer !== null) clearInterval(resumeTimer);
        call?.cancel();
      },
    };
    pending.add(entry);
    const done = (): void => {
      if (resumeTimer !== null) clearInterval(resumeTimer);
      this.#settled(from.id, entry);
    };
    this.counts.forwarded++;
    let sentFrames = false;
    let answered = false;
    const frames = new FrameAssembler();
    // Who owned the partition when the call went out: if it never accepts and its lease runs out, the client is told that node failed.
    const ownerAtSend = this.#leases!.owners()[partition] ?? null;
    call = this.#client!.call(partition, forwardedBody(req, body), {
      frame: (piece) => {
        sentFrames = true;
        // Pieces cut anywhere (NATS messages stay small); the connection gets whole frames only, so nothing else it sends lands inside one.
        const whole = frames.push(piece);
        if (whole !== null) {
          if (hasLastFrame(whole)) answered = true;
          from.write(Buffer.from(whole)); // a copy: the socket may hold it past this call, and the bytes are the NATS client's
        }
        if (from.backlog() < parts.highWaterBytes) return true;
        // A slow client: hold the owner back until its connection drains.
        resumeTimer ??= setInterval(() => {
          if (from.backlog() >= parts.highWaterBytes) return;
          clearInterval(resumeTimer!);
          resumeTimer = null;
          call!.resume();
        }, 10);
        return false;
      },
      end: () => {
        done();
        // An owner whose handler failed ends the call without an answer: the client still gets one.
        if (!answered) from.reply(req, { error: { code: Code.Internal, message: `the cluster node serving partition ${partition} ended the request without an answer` } });
      },
      fail: (err: ForwardError) => {
        done();
        if (err.reason === 'unserved' && !sentFrames && performance.now() < deadline && !this.#stopping) return this.#hold(from, req, body, partition, deadline);
        let message = err.reason === 'unserved' ? `no cluster node serves this conversation's partition ${partition} now (it is changing hands); try again` : err.message;
        if (err.reason === 'lost' && call?.owner === null && ownerAtSend !== null && ownerAtSend !== this.settings.node) {
          // Name the node it went to. Live again here means it died and came back under its name before the accept timeout.
          const why = this.#leases!.liveNodes().includes(ownerAtSend) ? `did not accept it: ${err.message}` : 'its lease ran out';
          message = `cluster node ${ownerAtSend} failed (${why}) before accepting this request; whether the turn was stored is unknown: read the conversation's history`;
        }
        from.reply(req, { error: { code: Code.ShuttingDown, message } });
      },
    });
  }

  #stopping = false;
  /** Shutdown began: no forwarded request is taken any more (other nodes hold theirs until the partitions are released). */
  #leaving = false;

  /**
   * Shutdown's first step: takes no more requests from other nodes, so they
   * hold theirs (rather than getting "shutting down") until `stop` releases
   * the partitions to the nodes that stay. The partitions stay this node's
   * meanwhile: its own turns end (cancelled) and store under its tokens.
   */
  beginLeave(): void {
    this.#leaving = true;
    this.#server?.close();
  }

  /** Holds a request while its partition changes hands, then routes it again. */
  #hold(from: Requester, req: number, body: Record<string, unknown>, partition: number, deadline: number): void {
    this.counts.held++;
    const pending = this.#pendingOf(from.id);
    const timer = setTimeout(() => {
      this.#settled(from.id, entry);
      this.#routeTo(from, req, body, partition, deadline);
    }, this.settings.lease_ms / CHECKS_PER_LEASE);
    const entry = { cancel: () => clearTimeout(timer) };
    pending.add(entry);
  }

  #pendingOf(conn: number): Set<{ cancel(): void }> {
    let set = this.#pending.get(conn);
    if (set === undefined) this.#pending.set(conn, (set = new Set()));
    return set;
  }

  /** One of a connection's calls or held requests is over. */
  #settled(conn: number, entry: { cancel(): void }): void {
    const set = this.#pending.get(conn);
    if (set === undefined) return;
    set.delete(entry);
    if (set.size === 0) this.#pending.delete(conn);
  }

  /** A client connection closed: what it has under way on other nodes is cancelled there. */
  connClosed(conn: number): void {
    const set = this.#pending.get(conn);
    this.#pending.delete(conn);
    for (const entry of set ?? []) entry.cancel();
  }

  /** Runs a request another node forwarded, under a stand-in connection whose frames go back to it. */
  #serveForwarded(_partition: number, bytes: Uint8Array, reply: ForwardReply): void {
    const parts = this.#parts!;
    const { req, body } = decodeBody(bytes) as { req: number; body: Record<string, unknown> };
    const id = this.#nextForwardedId;
    this.#nextForwardedId = this.#nextForwardedId >= 0xffff_fff0 ? FORWARDED_ID_BASE : this.#nextForwardedId + 1;
    this.counts.served_for_others++;
    const stand = new ForwardedRequest(id, req, reply, parts.hardLimitBytes, () => this.#forwarded.delete(id), () => {
      parts.pool.broadcast({ type: 'conn_closed', conn: id });
    });
    this.#forwarded.set(id, stand);
    parts.local(stand, req, body);
  }

  readonly #onStop: (() => void)[] = [];

  /** Runs `fn` when the node leaves, before NATS closes. */
  onStop(fn: () => void): void {
    this.#onStop.push(fn);
  }

  /** Leaves the cluster: releases its partitions and closes NATS. */
  async stop(): Promise<void> {
    this.#stopping = true;
    for (const fn of this.#onStop) fn();
    if (this.#checkTimer !== null) clearInterval(this.#checkTimer);
    for (const conn of [...this.#pending.keys()]) this.connClosed(conn);
    this.#server?.close();
    await this.#leases?.stop();
    await this.#nc.drain().catch(() => undefined);
  }
}

/** The pair a request addresses, or null (not a pair operation, or arguments the local dispatch will refuse). */
function pairOf(body: Record<string, unknown>, defaultSender: string): { agent: string; sender: string } | null {
  const keys = Object.keys(body);
  if (keys.length !== 1 || !PAIR_OPS.has(keys[0]!)) return null;
  const args = body[keys[0]!];
  if (!isPlainMap(args) || typeof args.agent !== 'string' || args.agent === '') return null;
  const sender = args.sender === undefined || args.sender === null || args.sender === '' ? defaultSender : args.sender;
  if (typeof sender !== 'string') return null;
  return { agent: args.agent, sender };
}

/** The request as it travels: its id at the entry node (the owner answers under it) and its body, a big content as text. */
function forwardedBody(req: number, body: Record<string, unknown>): Uint8Array {
  const name = Object.keys(body)[0]!;
  const args = body[name] as Record<string, unknown>;
  const plain = args.content instanceof ContentBytes ? { [name]: { ...args, content: utf8Text(args.content.bytes) } } : body;
  return encodeBody({ req, body: plain });
}

/**
 * The owner's stand-in for the entry node's client connection: takes the
 * frames the shards (and dispatch) write for the call, and sends them to
 * the entry node under the call's window; ends the call after the frame
 * flagged last. Frames the window holds back wait here; past `hardLimit`
 * bytes the entry node is taken for gone and the call is cancelled.
 */
class ForwardedRequest implements Requester {
  readonly id: number;
  readonly #req: number;
  readonly #reply: ForwardReply;
  readonly #hardLimit: number;
  readonly #forget: () => void;
  readonly #cancelTurns: () => void;
  readonly #queue: Uint8Array[] = [];
  #queued = 0;
  #held = false;
  #lastSeen = false;
  #over = false;

  constructor(id: number, req: number, reply: ForwardReply, hardLimit: number, forget: () => void, cancelTurns: () => void) {
    this.id = id;
    this.#req = req;
    this.#reply = reply;
    this.#hardLimit = hardLimit;
    this.#forget = forget;
    this.#cancelTurns = cancelTurns;
    reply.onDrain(() => {
      this.#held = false;
      this.#flush();
    });
    reply.onCancel(() => this.#cancel());
  }

  reply(req: number, value: unknown): void {
    this.write(frameOf(req, FLAG_LAST, value));
  }

  write(frames: Uint8Array): void {
    if (this.#over || this.#lastSeen) return;
    if (hasLastFrame(frames)) this.#lastSeen = true;
    for (let at = 0; at < frames.length; at += MAX_PIECE_BYTES) this.#queue.push(frames.subarray(at, at + MAX_PIECE_BYTES));
    this.#queued += frames.length;
    if (this.#queued > this.#hardLimit && this.#held) {
      // The entry node stopped taking frames: cut the call, telling it why (past the window: it ends the call).
      this.#cancel();
      this.#reply.write(frameOf(this.#req, FLAG_LAST, { error: { code: Code.Internal, message: `the forwarded reply was cut: over ${this.#hardLimit} bytes waited for the entry node to take them` } }));
      this.#reply.end();
      return;
    }
    this.#flush();
  }

  backlog(): number {
    return this.#queued;
  }

  #flush(): void {
    while (!this.#held && this.#queue.length > 0) {
      const next = this.#queue.shift()!;
      this.#queued -= next.length;
      this.#held = !this.#reply.write(next);
    }
    if (this.#queue.length === 0 && this.#lastSeen && !this.#over) {
      this.#over = true;
      this.#reply.end();
      this.#forget();
    }
  }

  /** The entry node left (or stopped reading): the call's turns are cancelled and nothing more is sent. */
  #cancel(): void {
    if (this.#over) return;
    this.#over = true;
    this.#queue.length = 0;
    this.#forget();
    this.#cancelTurns();
  }
}

/**
 * The most bytes of frames one forwarded message carries: well under NATS's
 * default max_payload (1 MiB), and with the window (forward.ts) a bound on
 * what one call has in flight.
 */
const MAX_PIECE_BYTES = 64 * 1024;

/** Joins the pieces of a forwarded call's frames back into whole frames. */
class FrameAssembler {
  #pending: Buffer = Buffer.alloc(0);

  /** Takes a piece; returns the whole frames now complete (null: none yet). */
  push(piece: Uint8Array): Uint8Array | null {
    const bytes = this.#pending.length === 0 ? Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength) : Buffer.concat([this.#pending, piece]);
    let at = 0;
    while (at + HEADER_BYTES <= bytes.length) {
      const end = at + HEADER_BYTES + bytes.readUInt32BE(at);
      if (end > bytes.length) break;
      at = end;
    }
    // Copies what waits: the piece's buffer belongs to the NATS client.
    this.#pending = Buffer.from(bytes.subarray(at));
    return at === 0 ? null : bytes.subarray(0, at);
  }
}

/** Whether ready-encoded frames (one or more, whole) include one flagged last. */
function hasLastFrame(frames: Uint8Array): boolean {
  const view = new DataView(frames.buffer, frames.byteOffset, frames.byteLength);
  for (let at = 0; at + HEADER_BYTES <= frames.length; at += HEADER_BYTES + view.getUint32(at)) {
    if ((frames[at + FRAME_FLAGS_OFFSET]! & FLAG_LAST) !== 0) return true;
  }
  return false;
}
