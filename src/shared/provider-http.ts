/**
 * HTTP pieces shared by the OpenAI-compatible provider (in the shards) and
 * `list_models` (on main): URLs, auth headers, and the endpoint's error
 * message. The API key is read from the environment at request time and goes
 * only into the Authorization header.
 */
import type { ProviderConfig } from './config.ts';
import { AgentdError, Code } from './errors.ts';

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

export function apiUrl(baseUrl: string, path: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/${path}`;
}

export function authHeaders(cfg: ProviderConfig): Record<string, string> {
  const headers: Record<string, string> = { ...cfg.headers };
  const key = cfg.api_key_env === null ? undefined : process.env[cfg.api_key_env];
  if (key) headers.authorization = `Bearer ${key}`;
  return headers;
}

/** The model ids an endpoint offers (GET /models). */
export async function listModels(cfg: ProviderConfig, signal?: AbortSignal): Promise<string[]> {
  const res = await fetch(apiUrl(cfg.base_url, 'models'), { headers: authHeaders(cfg), signal: signal ?? null });
  const text = await res.text();
  if (!res.ok) throw new ProviderError(`${res.status} ${errorMessage(text)}`, res.status);
  const parsed = JSON.parse(text) as { data?: { id?: string }[]; models?: { name?: string; model?: string }[] };
  if (Array.isArray(parsed.data)) return parsed.data.map((m) => m.id).filter((id): id is string => typeof id === 'string');
  if (Array.isArray(parsed.models)) return parsed.models.map((m) => m.model ?? m.name).filter((id): id is string => typeof id === 'string');
  return [];
}
