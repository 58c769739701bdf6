/**
 * The one redaction step for text that leaves the daemon after a provider or
 * a tool produced it (replies, logs, the database). It removes:
 *
 *   - configured secret values: every provider's API key (the value of its
 *     `api_key_env`) and header values, and the agent's MCP `env` and
 *     `headers` values;
 *   - in errors and tool output, also any `Bearer <token>` and any
 *     `Authorization` header value, configured or not.
 *
 * Model text (streamed text, thinking, tool-call arguments) gets only the
 * configured values: a model may legitimately write about "Bearer" headers,
 * and the only secrets a provider can echo are the ones it was sent. Streams
 * are matched across chunk boundaries by holding back a chunk's tail while it
 * could still be the start of a secret. With no configured values there is
 * nothing to match in model text, and that path costs nothing.
 */

export const REDACTED = '[redacted]';

/** Shorter values are not treated as secrets: they cannot be told from ordinary words. */
export const MIN_SECRET_CHARS = 6;

/** A held-back stream tail this long that never completed a secret is still redacted at the end. */
const PARTIAL_SECRET_CHARS = 8;

/** `Bearer <token>`, and `Authorization: <value>` in header, JSON or key=value form. */
const GENERIC = /\b(Bearer\s+)[A-Za-z0-9._~+/=-]+|(authorization["']?\s*[:=]\s*["']?)(?:(?:Bearer|Basic|Token|Digest)\s+)?[^\s"',;}]+/gi;

/** Only worth running GENERIC when one of these appears (case-insensitive). */
const GENERIC_HINT = /bearer|authorization/i;

function genericOnly(text: string): string {
  if (!GENERIC_HINT.test(text)) return text;
  return text.replace(GENERIC, (_m, bearer: string | undefined, auth: string | undefined) => (bearer ?? auth ?? '') + REDACTED);
}

export class Redactor {
  /** The configured values, longest first (so a value containing another is replaced whole). */
  readonly secrets: readonly string[];
  readonly #maxLength: number;

  constructor(values: Iterable<string | undefined | null>) {
    const set = new Set<string>();
    for (const v of values) if (typeof v === 'string' && v.length >= MIN_SECRET_CHARS) set.add(v);
    this.secrets = [...set].sort((a, b) => b.length - a.length);
    this.#maxLength = this.secrets[0]?.length ?? 0;
  }

  /** True when there are configured values to look for. */
  get active(): boolean {
    return this.secrets.length > 0;
  }

  /** Model text: configured values only. */
  values(text: string): string {
    let out = text;
    for (const s of this.secrets) if (out.includes(s)) out = out.split(s).join(REDACTED);
    return out;
  }

  /** Errors and tool output: configured values, then Bearer tokens and Authorization values. */
  all(text: string): string {
    return genericOnly(this.values(text));
  }

  /** The same error with its message (and stack) redacted; anything else becomes an Error. */
  error(err: unknown): Error {
    if (!(err instanceof Error)) return new Error(this.all(String(err)));
    const message = this.all(err.message);
    if (message === err.message) return err; // kept as is: its class and fields may matter to the caller
    const clean = new Error(message);
    clean.name = err.name;
    return clean;
  }

  /** A redactor for one stream of text deltas (see StreamRedactor). */
  stream(): StreamRedactor {
    return new StreamRedactor(this);
  }

  /** How many chars at the end of `text` are a proper prefix of some secret (the longest such tail). */
  partialTail(text: string): number {
    const from = Math.max(0, text.length - (this.#maxLength - 1));
    for (let i = from; i < text.length; i++) {
      const tail = text.length - i;
      const c = text.charCodeAt(i);
      for (const s of this.secrets) {
        if (s.length > tail && s.charCodeAt(0) === c && s.startsWith(text.slice(i))) return tail;
      }
    }
    return 0;
  }
}

/** No configured values: only the generic patterns apply. */
export const GENERIC_REDACTOR = new Redactor([]);

/**
 * Redacts a stream of deltas so that a secret split across chunks is caught:
 * a chunk's tail that could still grow into a secret is held back and sent
 * with the next delta (or at `flush`). Text never waits otherwise.
 */
export class StreamRedactor {
  readonly #r: Redactor;
  #held = '';

  constructor(redactor: Redactor) {
    this.#r = redactor;
  }

  /** The part of `delta` (with what was held) that is safe to send now; may be ''. */
  push(delta: string): string {
    const text = this.#r.values(this.#held + delta);
    const keep = this.#r.partialTail(text);
    this.#held = keep === 0 ? '' : text.slice(text.length - keep);
    return keep === 0 ? text : text.slice(0, text.length - keep);
  }

  /** What was held back: the stream ended, or other output must come first. */
  flush(): string {
    const held = this.#held;
    this.#held = '';
    return held.length >= PARTIAL_SECRET_CHARS ? REDACTED : held;
  }
}

/** What the secret values are read from: the config shapes, kept structural so this module stays a leaf. */
interface ProviderSecrets {
  headers: Record<string, string>;
}
interface AgentSecrets {
  mcps: Record<string, { env?: Record<string, string>; headers?: Record<string, string> }>;
}

/**
 * The configured secret values for one agent: every provider's API key and
 * header values (a tool could leak any of them), and the agent's MCP `env`
 * and `headers` values. `apiKey` reads a provider's key where requests do.
 */
export function secretValues<P extends ProviderSecrets>(
  providers: Iterable<P>,
  apiKey: (provider: P) => string | undefined,
  agent: AgentSecrets | null = null,
): string[] {
  const out: string[] = [];
  for (const p of providers) {
    const key = apiKey(p);
    if (key !== undefined) out.push(key);
    out.push(...Object.values(p.headers));
  }
  for (const m of Object.values(agent?.mcps ?? {})) {
    out.push(...Object.values(m.env ?? {}), ...Object.values(m.headers ?? {}));
  }
  return out;
}

/**
 * A URL as a message or a log line may show it: its password (a store's or
 * NATS's `user:password@`) replaced, else unchanged; a string that does not
 * parse as a URL and holds an "@" is not shown at all, since where its
 * password sits cannot be told.
 */
export function withoutPassword(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    // Without an "@" there is no user:password part to hide.
    return value.includes('@') ? '(a URL that does not parse)' : value;
  }
  if (url.password === '') return value; // as the user wrote it
  url.password = '***';
  return url.toString();
}
