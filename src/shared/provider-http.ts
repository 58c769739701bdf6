/**
 * HTTP pieces shared by the OpenAI-compatible provider (in the shards) and
 * `list_models` (on main): URLs, auth headers, and the endpoint's error
 * message. The API key is read from the environment at request time and goes
 * only into the Authorization header; error text an endpoint sends back is
 * redacted before it leaves (see redact.ts).
 */
import type { ProviderConfig } from './config.ts';
import { AgentdError, Code } from './errors.ts';
import { Redactor, secretValues } from './redact.ts';

/** A model endpoint failed; `status` is its HTTP status, when it answered at all. */
export class ProviderError extends AgentdError {
  readonly status: number | null;
  constructor(message: string, status: number | null = null) {
    super(Code.Internal, message);
    this.name = 'ProviderError';
    this.status = status;
  }
}

/** The endpoint's own error message, from whichever shape it used. */
export function errorMessage(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: string } | string; message?: string; detail?: string };
    if (typeof parsed.error === 'string') return parsed.error;
    if (typeof parsed.error?.message === 'string') return parsed.error.message;
    if (typeof parsed.message === 'string') return parsed.message;
    if (typeof parsed.detail === 'string') return parsed.detail;
  } catch {
    // not JSON: use the text
  }
  return body.trim().slice(0, 500);
}

/** "HTTP 401 Unauthorized: <the endpoint's message>": what a failed request tells the user (a turn's error, a reply). */
export function httpFailure(status: number, statusText: string, body: string): string {
  return `HTTP ${status}${statusText !== '' ? ` ${statusText}` : ''}: ${errorMessage(body) || 'no message'}`;
}

export function apiUrl(baseUrl: string, path: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/${path}`;
}

/** The provider's API key, read from the environment at request time (the one place that reads it). */
export function apiKeyOf(cfg: ProviderConfig): string | undefined {
  return cfg.api_key_env === null ? undefined : process.env[cfg.api_key_env] || undefined;
}

export function authHeaders(cfg: ProviderConfig): Record<string, string> {
  const headers: Record<string, string> = { ...cfg.headers };
  const key = apiKeyOf(cfg);
  if (key) headers.authorization = `Bearer ${key}`;
  return headers;
}

/** Removes what this provider was sent (its key, its header values) from text it answered with. */
export function redactProviderText(cfg: ProviderConfig, text: string): string {
  return new Redactor(secretValues([cfg], apiKeyOf)).all(text);
}

/** The model ids an endpoint offers (GET /models). */
export async function listModels(cfg: ProviderConfig, signal?: AbortSignal): Promise<string[]> {
  const res = await fetch(apiUrl(cfg.base_url, 'models'), { headers: authHeaders(cfg), signal: signal ?? null });
  const text = await res.text();
  // An endpoint may quote the request (its Authorization header) in its error body.
  if (!res.ok) throw new ProviderError(redactProviderText(cfg, httpFailure(res.status, res.statusText, text)), res.status);
  let parsed: { data?: { id?: string }[]; models?: { name?: string; model?: string }[] };
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch {
    // JSON.parse quotes the text it choked on: say so without it.
    throw new ProviderError('the endpoint sent a model list that is not JSON');
  }
  if (Array.isArray(parsed.data)) return parsed.data.map((m) => m.id).filter((id): id is string => typeof id === 'string');
  if (Array.isArray(parsed.models)) return parsed.models.map((m) => m.model ?? m.name).filter((id): id is string => typeof id === 'string');
  return [];
}
