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
 * they are (the owner answers under the client's own request id); a slow
 * client holds the owner back until its connection drained. While no
 * node serves the partition (it changes hands) the request is held and tried
 * again, up to `holdMs`. The shards learn the tokens this node holds through
 * a SharedFences buffer, so their PostgreSQL writes are fenced.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { utf8Text } from '../shared/codec.ts';
import { withoutPassword } from '../shared/redact.ts';
import { AgentdError, Code } from '../shared/errors.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { isPlainMap } from '../shared/args.ts';
import type { ClusterSettings } from '../shared/config.ts';
import type { Logger } from '../shared/log.ts';
import type { ClusterStats, DrainReport } from '../shared/wire/ops.ts';
import { partitionOf, SharedFences } from '../shared/partitions.ts';
import { runIdHash } from '../shared/wire/run-id.ts';
import type { Dispatch, Requester } from '../main/dispatch.ts';
import type { ShardPool } from '../main/hosts/shard-pool.ts';
import type { StoragePool } from '../main/hosts/storage-pool.ts';
import { ContentBytes } from '../main/net/request-body.ts';
import { ForwardClient, ForwardError, ForwardServer, type ForwardCall, type ForwardReply } from './forward.ts';
import { ForwardedRequest, hasLastFrame } from './forwarded-request.ts';
import { LeaseManager } from './leases.ts';
import { decodeMessage, encodeMessage } from './messages.ts';

/** The operations addressed to one pair (`agent`, `sender`): each runs at the pair's owner. */
export const PAIR_OPS: ReadonlySet<string> = new Set(['stream', 'send', 'kill', 'compact', 'get_conversation_history', 'delete_conversation', 'steer', 'import_messages']);

/** The operations addressed to one run (`run_id`): each runs at the owner of the pair whose hash the run id carries. */
export const RUN_OPS: ReadonlySet<string> = new Set(['get_run', 'join_run', 'approve_tool']);

/** How often `drain` looks whether this node still serves a partition. */
const DRAIN_POLL_MS = 50;

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
      claim: (partition, epoch, revision) => parts.storage.run<number | null>({ op: 'claim_partition', partition, epoch, revision }),
      epoch: (current) => parts.storage.run<number>({ op: 'bucket_epoch', current }),
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
      // Runs waiting for approval on the partition resume here, ahead of the requests served from now on.
      parts.pool.broadcast({ type: 'restore_runs', partition: p, partitions: settings.partitions });
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
    const partition = partitionOfRequest(body, parts.defaultSender, this.settings.partitions);
    if (partition === null || parts.closing()) return parts.local(from, req, body);
    this.#routeTo(from, req, body, partition, performance.now() + this.#holdMs);
  };

  #routeTo(from: Requester, req: number, body: Record<string, unknown>, partition: number, deadline: number): void {
    const parts = this.#parts!;
    if (this.#leases!.tokenOf(partition) !== null) return parts.local(from, req, body);
    const pending = this.#pendingOf(from.id);
    let call: ForwardCall | null = null;
    const entry = { cancel: () => call?.cancel() };
    pending.add(entry);
    const done = (): void => this.#settled(from.id, entry);
    this.counts.forwarded++;
    let sentFrames = false;
    let answered = false;
    // Who owned the partition when the call went out: if it never accepts and its lease runs out, the client is told that node failed.
    const ownerAtSend = this.#leases!.owners()[partition] ?? null;
    call = this.#client!.call(partition, forwardedBody(req, body), {
      frame: (frames) => {
        sentFrames = true;
        if (hasLastFrame(frames)) answered = true;
        from.write(Buffer.from(frames)); // a copy: the socket may hold it past this call, and the bytes are the NATS client's
        if (from.backlog() < parts.highWaterBytes || from.drained === undefined) return true;
        // A slow client: hold the owner back until its connection drains.
        void from.drained().then(() => call!.resume());
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
  /**
   * `drain`: no partition targets this node any more, so its rounds give
   * them up (each once its running turns ended) and the others take them;
   * requests for them meanwhile are held, then forwarded. Resolves once
   * this node serves none.
   */
  async drain(): Promise<DrainReport> {
    const leases = this.#leases;
    if (leases === null) throw new AgentdError(Code.ShuttingDown, 'this cluster node is not serving yet');
    const served = leases.served().length;
    leases.drain();
    this.#log.warn({ node: this.settings.node, partitions: served }, 'cluster node draining: handing its partitions to the other nodes');
    while (leases.served().length > 0) await sleep(DRAIN_POLL_MS);
    this.#log.warn({ node: this.settings.node }, 'cluster node drained: it serves no partition');
    return { node: this.settings.node, released: served };
  }

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
    const { req, body } = decodeMessage(bytes, 'request');
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
/** The partition a pair or run request goes to; null for a request addressed to neither (or malformed: the local dispatch refuses it). */
function partitionOfRequest(body: Record<string, unknown>, defaultSender: string, partitions: number): number | null {
  const pair = pairOf(body, defaultSender);
  if (pair !== null) return partitionOf(pair.agent, pair.sender, partitions);
  const keys = Object.keys(body);
  if (keys.length !== 1 || !RUN_OPS.has(keys[0]!)) return null;
  const args = body[keys[0]!];
  const hash = isPlainMap(args) && typeof args.run_id === 'string' ? runIdHash(args.run_id) : null;
  return hash === null ? null : hash % partitions;
}

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
  return encodeMessage({ t: 'request', req, body: plain });
}
