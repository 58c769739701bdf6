/**
 * A shard's side of the MCP thread: an agent's MCP tools for a turn, each a
 * Tool whose `run` asks the MCP thread to call it. The shard only awaits
 * messages; cancelling the turn sends `cancel`, which aborts the call at its
 * server (the SDK's request cancellation), and the tool rejects at once.
 *
 * PortRpc, not comlink: a cancelled turn must reach the call at its server,
 * and comlink has no way to cancel a call.
 */
import type { MessagePort } from 'node:worker_threads';
import type { McpAnswer, McpRequest, McpToolSpec } from '../../threads/mcp/messages.ts';
import { PortRpc } from '../../shared/threads/port-rpc.ts';
import type { Tool } from './tools.ts';

type Ask = { type: 'tools'; agent: string } | { type: 'call'; agent: string; name: string; args: unknown; timeoutMs: number };

export class McpTools {
  readonly #rpc: PortRpc<Ask, McpAnswer>;

  constructor(port: MessagePort) {
    this.#rpc = new PortRpc(port, () => new Error('MCP: the MCP thread stopped before it answered'));
    port.unref(); // pending calls keep their turns alive, not the thread
  }

  /** The agent's MCP tools as offered now (servers not started yet are started first); each call may run `timeoutMs`. */
  async toolsFor(agent: string, timeoutMs: number, signal: AbortSignal): Promise<Tool[]> {
    const a = await this.#ask({ type: 'tools', agent }, signal);
    if (!('tools' in a)) throw new Error(`MCP tools: ${'error' in a ? a.error : 'no answer'}`);
    return a.tools.map(({ server, ...spec }: McpToolSpec) => ({ ...spec, mcpServer: server, run: (args, ctx) => this.#call(agent, spec.name, args, timeoutMs, ctx.signal) }));
  }

  async #call(agent: string, name: string, args: unknown, timeoutMs: number, signal: AbortSignal): Promise<string> {
    const a = await this.#ask({ type: 'call', agent, name, args, timeoutMs }, signal);
    if ('error' in a) throw new Error(a.error);
    if (!('output' in a)) throw new Error('MCP call: no result');
    if (a.isError) throw new Error(a.output);
    return a.output;
  }

  #ask(what: Ask, signal: AbortSignal): Promise<McpAnswer> {
    return this.#rpc.request(what, signal, (id) => this.#rpc.post({ type: 'cancel', id } satisfies McpRequest));
  }
}
