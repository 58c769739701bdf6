/**
 * The names MCP tools are offered under: `<server>__<tool>`, sanitized to
 * `^[a-zA-Z0-9_-]{1,64}$` (what every model API accepts). Sanitizing can make
 * two names equal, so a later duplicate gets a numbered suffix; servers and
 * tools are taken in name order, so the same tool lists always give the same names.
 */

export const MCP_TOOL_SEPARATOR = '__';
const MAX_TOOL_NAME = 64;

/** Which server tool an offered name stands for. */
export interface McpToolRef {
  server: string;
  tool: string;
}

function sanitize(name: string): string {
  const clean = name.replace(/[^a-zA-Z0-9_-]/g, '_');
  return (clean === '' ? '_' : clean).slice(0, MAX_TOOL_NAME);
}

function unique(base: string, taken: ReadonlySet<string>): string {
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) {
    const suffix = `_${n}`;
    const candidate = base.slice(0, MAX_TOOL_NAME - suffix.length) + suffix;
    if (!taken.has(candidate)) return candidate;
  }
}

/** Offered name -> server tool, for the given servers' tool names. */
export function offeredToolNames(servers: ReadonlyMap<string, readonly string[]>): Map<string, McpToolRef> {
  const out = new Map<string, McpToolRef>();
  for (const server of [...servers.keys()].sort()) {
    for (const tool of [...servers.get(server)!].sort()) {
      out.set(unique(sanitize(`${server}${MCP_TOOL_SEPARATOR}${tool}`), new Set(out.keys())), { server, tool });
    }
  }
  return out;
}
