/**
 * The per-listener connection cap. Each listener (Unix socket, TCP) counts
 * its own open connections, so a flood of TCP connections can fill TCP's
 * share but never the Unix socket's: the operator can still get in.
 */
import type { Socket } from 'node:net';
import { FLAG_LAST, frameOf } from '../../shared/codec.ts';
import { Code } from '../../shared/errors.ts';
import type { OnSocket } from './listeners.ts';
import type { LimitLog } from '../limit-log.ts';

type Transport = 'unix' | 'tcp';

/** How long a refused socket may take to read its 429 before it is cut. */
const REFUSED_LINGER_MS = 1_000;

/** A type, not an interface, so that it spreads into get_stats' open map. */
export type ConnectionLimitStats = {
  connections_by_listener: Record<Transport, number>;
  refused_connections: Record<Transport, number>;
};

export class ConnectionLimiter {
  readonly max: number;
  readonly #open: Record<Transport, number> = { unix: 0, tcp: 0 };
  readonly #refused: Record<Transport, number> = { unix: 0, tcp: 0 };

  constructor(
    maxPerListener: number,
    readonly limitLog: LimitLog | null = null,
  ) {
    this.max = maxPerListener;
  }

  /** Wraps `next`: sockets under the cap are counted until they close and passed on; the rest get 429. */
  admit(next: OnSocket): OnSocket {
    return (socket, transport) => {
      if (this.#open[transport] >= this.max) {
        this.#refuse(socket, transport);
        return;
      }
      this.#open[transport]++;
      socket.once('close', () => this.#open[transport]--);
      next(socket, transport);
    };
  }

  #refuse(socket: Socket, transport: Transport): void {
    this.#refused[transport]++;
    socket.on('error', () => {});
    socket.resume(); // discard what it sends, so our close is a FIN the peer can read past, not a reset
    const error = { code: Code.TooMany, message: `too many connections on the ${transport} listener (max_connections ${this.max}); try again later` };
    socket.end(frameOf(0, FLAG_LAST, { error }));
    this.limitLog?.hit(`max_connections ${transport}`, error.message, { transport, refused: this.#refused[transport] });
    setTimeout(() => socket.destroy(), REFUSED_LINGER_MS).unref();
  }

  stats(): ConnectionLimitStats {
    return {
      connections_by_listener: { ...this.#open },
      refused_connections: { ...this.#refused },
    };
  }
}
