/**
 * A shard's side of the MCP thread: an agent's MCP tools for a turn, each a
 * Tool whose `run` asks the MCP thread to call it. The shard only awaits
 * messages; cancelling the turn sends `cancel`, which aborts the call at its
 * server (the SDK's request cancellation), and the tool rejects at once.
 */
import type { MessagePort } from 'node:worker_threads';
import type { McpAnswer, McpRequest, McpToolSpec } from '../../threads/mcp/messages.ts';
import type { Tool } from './tools.ts';

type Ask = { type: 'tools'; agent: string } | { type: 'call'; agent: string; name: string; args: unknown; timeoutMs: number };

export class McpTools {
  readonly #port: MessagePort;
  readonly #pending = new Map<number, (a: McpAnswer) => void>();
  #nextId = 1;

  constructor(port: MessagePort) {
    this.#port = port;
    port.on('message', (a: McpAnswer) => {
      const settle = this.#pending.get(a.id);
      this.#pending.delete(a.id);
      settle?.(a);
    });
    port.unref(); // pending calls keep their turns alive, not the thread
  }

  /** The agent's MCP tools as offered now (servers not started yet are started first); each call may run `timeoutMs`. */
  async toolsFor(agent: string, timeoutMs: number, signal: AbortSignal): Promise<Tool[]> {
    const a = await this.#ask({ type: 'tools', agent }, signal);
    if (!('tools' in a)) throw new Error(`MCP tools: ${'error' in a ? a.error : 'no answer'}`);
    return a.tools.map((spec: McpToolSpec) => ({ ...spec, run: (args, ctx) => this.#call(agent, spec.name, args, timeoutMs, ctx.signal) }));
  }

  async #call(agent: string, name: string, args: unknown, timeoutMs: number, signal: AbortSignal): Promise<string> {
    const a = await this.#ask({ type: 'call', agent, name, args, timeoutMs }, signal);
    if ('error' in a) throw new Error(a.error);
    if (!('output' in a)) throw new Error('MCP call: no result');
    if (a.isError) throw new Error(a.output);
    return a.output;
  }

  #ask(what: Ask, signal: AbortSignal): Promise<McpAnswer> {
    signal.throwIfAborted();
    const id = this.#nextId++;
    return new Promise<McpAnswer>((resolve, reject) => {
      const onAbort = (): void => {
        this.#pending.delete(id);
        this.#port.postMessage({ type: 'cancel', id } satisfies McpRequest);
        reject(signal.reason instanceof Error ? signal.reason : new Error('cancelled'));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#pending.set(id, (a) => {
        signal.removeEventListener('abort', onAbort);
        resolve(a);
      });
      this.#port.postMessage({ ...what, id } satisfies McpRequest);
    });
  }
}
