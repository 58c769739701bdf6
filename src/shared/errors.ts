/**
 * The one table of wire error codes (PROTOCOL.md §2). The numeric code is the
 * contract; the class is a convenience that never crosses a thread boundary
 * (a posted Error loses its class), so threads exchange `{code, message}`.
 */
export const Code = {
  BadRequest: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  Conflict: 409,
  TooLarge: 413,
  TooMany: 429,
  Cancelled: 499,
  Internal: 500,
  ShuttingDown: 503,
  Timeout: 504,
} as const;
export type Code = (typeof Code)[keyof typeof Code];

const KNOWN_CODES: ReadonlySet<number> = new Set(Object.values(Code));

export function isCode(value: unknown): value is Code {
  return typeof value === 'number' && KNOWN_CODES.has(value);
}

export class AgentdError extends Error {
  readonly code: Code;
  constructor(code: Code, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'AgentdError';
    this.code = code;
  }
}

/** The plain shape errors take on the wire and between threads. */
export interface WireError {
  code: Code;
  message: string;
}

/** Turns anything thrown into a wire error; unknown failures become 500. */
export function toWireError(err: unknown): WireError {
  if (err instanceof AgentdError) return { code: err.code, message: err.message };
  if (err instanceof Error) return { code: Code.Internal, message: err.message || err.name };
  return { code: Code.Internal, message: String(err) };
}

/** A configuration that does not validate: 400 when it came in a request (`create_agent`, `update_agent`). */
export class ConfigError extends AgentdError {
  constructor(source: string, field: string, what: string) {
    super(Code.BadRequest, `${source}: ${field} ${what}`);
    this.name = 'ConfigError';
  }
}
