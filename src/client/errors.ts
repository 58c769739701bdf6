/** Errors the client raises: wire errors keep their numeric code; a lost connection has its own. */
export { AgentdError, Code } from '../shared/errors.ts';

/**
 * The code of a ConnectionClosedError. Client-side only: the daemon never
 * sends it, and it lies outside the protocol's table of codes (PROTOCOL §2).
 */
export const CONNECTION_CLOSED = 599;

/** The connection closed (or could not open) before the request finished. */
export class ConnectionClosedError extends Error {
  readonly code = CONNECTION_CLOSED;
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ConnectionClosedError';
  }
}
