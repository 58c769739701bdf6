/**
 * The per-listener connection cap. Each listener (Unix socket, TCP, HTTP) counts
 * its own open connections, so a flood of TCP connections can fill TCP's
 * share but never the Unix socket's: the operator can still get in.
 *
 * TCP (and HTTP) connections that have not authenticated yet may hold at most
 * half of their listener's slots. Past that, or when the listener is full, the
 * oldest of them is closed to make room: a flood of connections that never
 * authenticate only churns among themselves, and a client with the token
 * always gets in and, once authenticated, keeps its slot.
 */
import type { Socket } from 'node:net';
import { FLAG_LAST, frameOf } from '../../shared/codec.ts';
import { Code } from '../../shared/errors.ts';
import type { LimitLog } from '../limit-log.ts';

type Transport = 'unix' | 'tcp' | 'http';
/** The listeners whose connections must authenticate (the Unix socket never does). */
type Guarded = 'tcp' | 'http';

/** How long a refused socket may take to read its 429 before it is cut. */
const REFUSED_LINGER_MS = 1_000;

/** The share of a listener's slots unauthenticated connections may hold. */
export function preAuthSlots(maxPerListener: number): number {
  return Math.max(1, Math.floor(maxPerListener / 2));
}

/** A type, not an interface, so that it spreads into get_stats' open map. */
export type ConnectionLimitStats = {
  connections_by_listener: Record<Transport, number>;
  refused_connections: Record<Transport, number>;
  /** TCP connections not yet authenticated, and those closed to make room for newer ones. */
  unauthenticated_connections: number;
  unauthenticated_evicted: number;
};

export class ConnectionLimiter {
  /** Per listener; `reload_config` may change it (connections open past a lowered cap stay open). */
  max: number;
  readonly #open: Record<Transport, number> = { unix: 0, tcp: 0, http: 0 };
  readonly #refused: Record<Transport, number> = { unix: 0, tcp: 0, http: 0 };
  /** TCP and HTTP sockets not authenticated yet, oldest first (a Set keeps insertion order). */
  readonly #unauthenticated: Record<Guarded, Set<Socket>> = { tcp: new Set(), http: new Set() };
  readonly #evictedSockets = new WeakSet<Socket>();
  #evicted = 0;

  constructor(
    maxPerListener: number,
    readonly limitLog: LimitLog | null = null,
  ) {
    this.max = maxPerListener;
  }

  /**
   * Wraps `next`: sockets under the cap are counted until they close and
   * passed on; the rest get 429. A TCP socket counts as unauthenticated
   * until `authenticated` is called for it.
   */
  admit<T extends Transport>(next: (socket: Socket, transport: T) => void): (socket: Socket, transport: T) => void {
    return (socket, transport) => {
      if (transport !== 'unix') this.#makeRoomForUnauthenticated(transport as Guarded);
      if (this.#open[transport] >= this.max) {
        this.#refuse(socket, transport);
        return;
      }
      this.#open[transport]++;
      if (transport !== 'unix') this.#unauthenticated[transport as Guarded].add(socket);
      socket.once('close', () => {
        if (this.#evictedSockets.has(socket)) return; // its slot was freed when it was evicted
        if (transport !== 'unix') this.#unauthenticated[transport as Guarded].delete(socket);
        this.#open[transport]--;
      });
      next(socket, transport);
    };
  }

  /** The socket's connection authenticated (or needs no token): it keeps its slot. */
  authenticated(socket: Socket): void {
    this.#unauthenticated.tcp.delete(socket);
    this.#unauthenticated.http.delete(socket);
  }

  /** Closes the oldest unauthenticated socket while they hold their share, or the listener is full. */
  #makeRoomForUnauthenticated(transport: Guarded): void {
    const waiting = this.#unauthenticated[transport];
    while (waiting.size > 0 && (waiting.size >= preAuthSlots(this.max) || this.#open[transport] >= this.max)) {
      const oldest = waiting.values().next().value as Socket;
      waiting.delete(oldest);
      this.#evictedSockets.add(oldest);
      this.#open[transport]--; // its slot is free now, though its 429 may take a moment to be read
      this.#evicted++;
      const hint = transport === 'tcp' ? 'send auth first' : 'send Authorization: Bearer <token>';
      const message = `too many unauthenticated connections on the ${transport} listener (at most ${preAuthSlots(this.max)}, half of max_connections ${this.max}); ${hint}`;
      this.#closeWith(oldest, transport, message);
    }
  }

  #refuse(socket: Socket, transport: Transport): void {
    this.#refused[transport]++;
    const message = `too many connections on the ${transport} listener (max_connections ${this.max}); try again later`;
    this.#closeWith(socket, transport, message);
    this.limitLog?.hit(`max_connections ${transport}`, message, { transport, refused: this.#refused[transport] });
  }

  /** One 429 (a frame with request id 0, or an HTTP response), then the socket is closed. */
  #closeWith(socket: Socket, transport: Transport, message: string): void {
    socket.on('error', () => {});
    socket.resume(); // discard what it sends, so our close is a FIN the peer can read past, not a reset
    const error = { code: Code.TooMany, message };
    if (!socket.writableEnded) socket.end(transport === 'http' ? httpResponse(429, 'Too Many Requests', { error }) : frameOf(0, FLAG_LAST, { error }));
    setTimeout(() => socket.destroy(), REFUSED_LINGER_MS).unref();
  }

  stats(): ConnectionLimitStats {
    return {
      connections_by_listener: { ...this.#open },
      refused_connections: { ...this.#refused },
      unauthenticated_connections: this.#unauthenticated.tcp.size + this.#unauthenticated.http.size,
      unauthenticated_evicted: this.#evicted,
    };
  }
}

/** A whole HTTP/1.1 response with a JSON body, written straight to a socket the HTTP server has not seen. */
function httpResponse(status: number, reason: string, body: unknown): Buffer {
  const json = JSON.stringify(body);
  const head = `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(json)}\r\nconnection: close\r\n\r\n`;
  return Buffer.from(head + json);
}
