/**
 * The per-listener connection cap. Each listener (Unix socket, TCP) counts
 * its own open connections, so a flood of TCP connections can fill TCP's
 * share but never the Unix socket's: the operator can still get in.
 *
 * TCP connections that have not authenticated yet may hold at most half of
 * the TCP listener's slots. Past that, or when the listener is full, the
 * oldest of them is closed to make room: a flood of connections that never
 * authenticate only churns among themselves, and a client with the token
 * always gets in and, once authenticated, keeps its slot.
 */
import type { Socket } from 'node:net';
import { FLAG_LAST, frameOf } from '../../shared/codec.ts';
import { Code } from '../../shared/errors.ts';
import type { OnSocket } from './listeners.ts';
import type { LimitLog } from '../limit-log.ts';

type Transport = 'unix' | 'tcp';

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
  readonly #open: Record<Transport, number> = { unix: 0, tcp: 0 };
  readonly #refused: Record<Transport, number> = { unix: 0, tcp: 0 };
  /** TCP sockets not authenticated yet, oldest first (a Set keeps insertion order). */
  readonly #unauthenticated = new Set<Socket>();
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
  admit(next: OnSocket): OnSocket {
    return (socket, transport) => {
      if (transport === 'tcp') this.#makeRoomForUnauthenticated();
      if (this.#open[transport] >= this.max) {
        this.#refuse(socket, transport);
        return;
      }
      this.#open[transport]++;
      if (transport === 'tcp') this.#unauthenticated.add(socket);
      socket.once('close', () => {
        if (this.#evictedSockets.has(socket)) return; // its slot was freed when it was evicted
        this.#unauthenticated.delete(socket);
        this.#open[transport]--;
      });
      next(socket, transport);
    };
  }

  /** The socket's connection authenticated (or needs no token): it keeps its slot. */
  authenticated(socket: Socket): void {
    this.#unauthenticated.delete(socket);
  }

  /** Closes the oldest unauthenticated socket while they hold their share, or the listener is full. */
  #makeRoomForUnauthenticated(): void {
    while (this.#unauthenticated.size > 0 && (this.#unauthenticated.size >= preAuthSlots(this.max) || this.#open.tcp >= this.max)) {
      const oldest = this.#unauthenticated.values().next().value as Socket;
      this.#unauthenticated.delete(oldest);
      this.#evictedSockets.add(oldest);
      this.#open.tcp--; // its slot is free now, though its 429 may take a moment to be read
      this.#evicted++;
      const message = `too many unauthenticated connections on the tcp listener (at most ${preAuthSlots(this.max)}, half of max_connections ${this.max}); send auth first`;
      this.#closeWith(oldest, message);
    }
  }

  #refuse(socket: Socket, transport: Transport): void {
    this.#refused[transport]++;
    const message = `too many connections on the ${transport} listener (max_connections ${this.max}); try again later`;
    this.#closeWith(socket, message);
    this.limitLog?.hit(`max_connections ${transport}`, message, { transport, refused: this.#refused[transport] });
  }

  /** One 429 frame with request id 0, then the socket is closed. */
  #closeWith(socket: Socket, message: string): void {
    socket.on('error', () => {});
    socket.resume(); // discard what it sends, so our close is a FIN the peer can read past, not a reset
    if (!socket.writableEnded) socket.end(frameOf(0, FLAG_LAST, { error: { code: Code.TooMany, message } }));
    setTimeout(() => socket.destroy(), REFUSED_LINGER_MS).unref();
  }

  stats(): ConnectionLimitStats {
    return {
      connections_by_listener: { ...this.#open },
      refused_connections: { ...this.#refused },
      unauthenticated_connections: this.#unauthenticated.size,
      unauthenticated_evicted: this.#evicted,
    };
  }
}
