/**
 * The MCP thread: the one thread that owns every MCP connection of the
 * daemon. A connection is shared by all of an agent's conversations, which
 * live on different shards, so no shard can own it; main must never wait on a
 * server either. Main manages it over this worker's port (configs, reconnect,
 * shutdown) and hears every status change; each shard reaches it over a
 * MessagePort of its own to list an agent's tools and call them. A shard only
 * ever awaits a message here, so no shard event loop blocks on a server.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { createLogger } from '../../shared/log.ts';
import type { McpConfig } from '../../shared/config.ts';
import type { FromMcpThread, McpAnswer, McpRequest, McpState, McpThreadInit, ToMcpThread } from './messages.ts';
import type { McpServers } from './mcp-servers.ts';

const init = workerData as McpThreadInit;
const port = parentPort!;
const log = createLogger(init.logLevel, { thread: 'mcp' });
const post = (msg: FromMcpThread): void => port.postMessage(msg);

const report = (state: McpState, removed: boolean): void => {
  // Errors are redacted by the connection; nothing else here carries a secret.
  // A failure or a lost connection is a warning; the rest is routine.
  const level = state.status === 'failed' || (state.status === 'disconnected' && state.error !== '') ? 'warn' : 'info';
  log[level]({ agent: state.agent, server: state.name, status: state.status, error: state.error, removed }, 'mcp server status');
  post({ type: 'state', state, removed });
};

/** The SDK is loaded only once some agent has a server: a daemon without MCP servers starts as fast as before. */
let loading: Promise<McpServers> | null = null;
function servers(): Promise<McpServers> {
  loading ??= import('./mcp-servers.ts').then(({ McpServers }) => new McpServers({ home: init.home, report }));
  return loading;
}

/** Applies configs in order (each waits for the one before), loading the SDK at the first server. */
let applied: Promise<unknown> = Promise.resolve();
function applyConfigs(agents: Record<string, Record<string, McpConfig>>): void {
  if (loading === null && Object.keys(agents).length === 0) return;
  applied = applied
    .then(() => servers())
    .then((s) => s.apply(agents))
    .catch((err: unknown) => log.error({ err: String(err) }, 'applying MCP server settings failed'));
}

// A server's misbehaviour (an SDK callback throwing) must not take every other connection down.
process.on('uncaughtException', (err) => log.error({ err: err.message }, 'uncaught error in the MCP thread'));
process.on('unhandledRejection', (err) => log.error({ err: err instanceof Error ? err.message : String(err) }, 'unhandled rejection in the MCP thread'));

/** Serves one shard: each request answered once; `cancel` aborts a pending one. */
function serveShard(shard: MessagePort): void {
  const pending = new Map<number, AbortController>();
  const answer = (a: McpAnswer): void => shard.postMessage(a);
  shard.on('message', (req: McpRequest) => {
    if (req.type === 'cancel') {
      pending.get(req.id)?.abort(new Error('cancelled'));
      return;
    }
    const ctl = new AbortController();
    pending.set(req.id, ctl);
    const work = applied.then(() => servers()).then((s): Promise<McpAnswer> =>
      req.type === 'tools'
        ? s.toolsFor(req.agent, ctl.signal).then((tools) => ({ id: req.id, tools }))
        : s.call(req.agent, req.name, req.args, req.timeoutMs, ctl.signal).then((r) => ({ id: req.id, ...r })),
    );
    work
      .catch((err: unknown) => ({ id: req.id, error: err instanceof Error ? err.message : String(err) }))
      .then((a) => {
        pending.delete(req.id);
        if (!ctl.signal.aborted) answer(a);
      });
  });
  // The shard is gone (crashed or stopped): its calls are cancelled at their servers.
  shard.on('close', () => {
    for (const ctl of pending.values()) ctl.abort(new Error('the shard is gone'));
  });
}

port.on('message', (msg: ToMcpThread) => {
  switch (msg.type) {
    case 'configs':
      return applyConfigs(msg.agents);
    case 'reconnect':
      void applied.then(() => loading?.then((s) => s.reconnect(msg.agent, msg.name)));
      return;
    case 'port':
      return serveShard(msg.port);
    case 'shutdown':
      void applied
        .then(() => loading?.then((s) => s.closeAll()))
        .catch((err: unknown) => log.error({ err: String(err) }, 'stopping MCP servers failed'))
        .finally(() => post({ type: 'closed' }));
      return;
  }
});

applyConfigs(init.agents);
post({ type: 'ready' });
