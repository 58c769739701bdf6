/** Helpers for tests with real MCP servers (test/fixtures/mcp-*.mjs). */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { onTestFinished } from 'vitest';
import type { AgentdClient, StreamEvent } from '../../src/client/index.ts';
import { collect, waitFor } from './daemon.ts';
import type { McpInfo } from '../../src/shared/wire/ops.ts';

export const FIXTURES = resolve(import.meta.dirname, '../fixtures');
export const STDIO_SERVER = join(FIXTURES, 'mcp-stdio.mjs');
export const HTTP_SERVER = join(FIXTURES, 'mcp-http.mjs');

/** A temp dir the fixture servers write their pids and cancellations to; removed after the test. */
export function fixtureDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'agentd-mcp-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The lines of a fixture's note file (`pids`, `cancelled`), empty when it has none yet. */
export function notes(dir: string, file: string): string[] {
  const path = join(dir, file);
  return existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter((l) => l !== '') : [];
}

/** An `mcps` entry running the stdio fixture server with `node`. */
export function stdioEntry(dir: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const { env, ...rest } = extra as { env?: Record<string, string> };
  return { command: process.execPath, args: [STDIO_SERVER], env: { MCP_FIXTURE_DIR: dir, ...env }, ...rest };
}

/** Alive and not a zombie (a zombie has exited; only its entry waits to be reaped). */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

export async function waitGone(pid: number, what: string): Promise<void> {
  await waitFor(() => !isAlive(pid), what, 15_000);
}

/** Starts the HTTP fixture server (on `port`, or a free one); stopped after the test. */
export async function startHttpServer(dir: string, port = 0): Promise<{ proc: ChildProcess; url: string; port: number }> {
  const proc = spawn(process.execPath, [HTTP_SERVER, String(port)], { env: { ...process.env, MCP_FIXTURE_DIR: dir }, stdio: ['ignore', 'pipe', 'inherit'] });
  onTestFinished(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  const chosen = await new Promise<number>((resolvePort, reject) => {
    let out = '';
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) resolvePort(Number(m[1]));
    });
    proc.on('exit', (code) => reject(new Error(`the HTTP fixture server exited with ${code}`)));
  });
  return { proc, url: `http://127.0.0.1:${chosen}/mcp`, port: chosen };
}

export type ToolResultEvent = Extract<StreamEvent, { type: 'tool_result' }>;

/** Streams `/call <tool> <json>` as `sender` and returns its events and its one tool result. */
export async function callTool(c: AgentdClient, agent: string, tool: string, args: unknown, sender = 'user'): Promise<{ evs: StreamEvent[]; result: ToolResultEvent }> {
  const evs = await collect(c.stream(agent, `/call ${tool} ${JSON.stringify(args)}`, { sender }));
  const result = evs.find((e) => e.type === 'tool_result') as ToolResultEvent | undefined;
  if (result === undefined) throw new Error(`no tool_result in ${JSON.stringify(evs)}`);
  return { evs, result };
}

export type { McpInfo };

export async function listMcps(c: AgentdClient, agent?: string): Promise<McpInfo[]> {
  const r = await c.request('list_mcps', agent === undefined ? {} : { agent });
  return (r.mcp_list as { mcps: McpInfo[] }).mcps;
}

export async function waitStatus(c: AgentdClient, agent: string, name: string, status: string): Promise<McpInfo> {
  let found: McpInfo | undefined;
  await waitFor(async () => {
    found = (await listMcps(c, agent)).find((m) => m.name === name);
    return found?.status === status;
  }, `MCP server ${agent}/${name} to be ${status}`, 15_000);
  return found!;
}
