/**
 * Keeps an MCP server's secrets (its `env` and `headers` values) out of
 * anything that leaves the MCP layer: errors, status, logs and tool results.
 * Values are replaced wherever they occur, so a server that echoes its own
 * token, or an error that quotes a header, still shows none of it.
 */
import type { McpConfig } from './config.ts';

export const REDACTED = '[redacted]';

/** The secret values of one server's settings, longest first (so a value containing another is replaced whole). */
export function secretsOf(config: McpConfig): string[] {
  const values = [...Object.values(config.env ?? {}), ...Object.values(config.headers ?? {})];
  // Very short values (empty, "1", "on") would redact ordinary words; they are not secrets worth the noise.
  return [...new Set(values.filter((v) => v.length >= 4))].sort((a, b) => b.length - a.length);
}

export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (out.includes(s)) out = out.split(s).join(REDACTED);
  return out;
}
