/** Errors the client raises: wire errors keep their numeric code; a lost connection has its own. */
export { AgentdError, Code } from '../shared/errors.ts';

/** The connection closed (or could not open) before the request finished. */
export class ConnectionClosedError extends Error {
  readonly code = 'ERR_AGENTD_CONNECTION_CLOSED';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ConnectionClosedError';
  }
}
