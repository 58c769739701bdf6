/**
 * The harness thread: runs harness modules for one shard. It is started with
 * a sanitized environment (no provider keys, no token) and shares nothing
 * with the shard but one message port, so harness code can neither read the
 * shard's `process.env` nor patch the `fetch` the shard's providers use.
 *
 * A harness module is a JS file in $AGENTD_HOME/harness exporting `tools` (or
 * a default export with `tools`, or a default array): each
 * `{name, description, parameters, run(args, ctx)}`, where `parameters` is a
 * JSON schema and `ctx` is `{agent, sender, signal, capabilities}`. Each
 * capability is a proxy that asks the shard, which checks the grant.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import type { Capability } from '../../shared/config.ts';
import { resolveHarnessModule } from '../../shared/harness-module.ts';
import { NO_PARAMETERS, type FromHarness, type HarnessThreadInit, type ToHarness } from './messages.ts';
import type { Capabilities, Tool, ToolContext } from '../../shard/tools/tools.ts';

const { home } = workerData as HarnessThreadInit;
const port = parentPort!;
const modules = new Map<string, Promise<Tool[]>>();
/** Calls running here, to abort their signal on `abort`. */
const running = new Map<number, AbortController>();
/** Capability requests waiting for the shard's answer. */
const asked = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
let nextAsk = 1;

const send = (msg: FromHarness): void => port.postMessage(msg);
const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

function load(name: string): Promise<Tool[]> {
  let loaded = modules.get(name);
  if (loaded === undefined) {
    // Resolved again here: the file may have changed since main checked it.
    loaded = resolveHarnessModule(home, name)
      .then((path) => import(pathToFileURL(path).href))
      .then((mod: Record<string, unknown>) => toolsOf(mod, name));
    loaded.catch(() => modules.delete(name)); // a failed load is retried next time
    modules.set(name, loaded);
  }
  return loaded;
}

function toolsOf(mod: Record<string, unknown>, name: string): Tool[] {
  const def = mod.default as { tools?: unknown } | unknown[] | undefined;
  const list = mod.tools ?? (Array.isArray(def) ? def : def?.tools);
  if (!Array.isArray(list)) throw new Error(`harness module ${name} exports no "tools" list`);
  return list.map((t: unknown, i) => {
    const tool = t as Partial<Tool> & { run?: (args: unknown, ctx: ToolContext) => unknown };
    if (typeof tool?.name !== 'string' || typeof tool.run !== 'function') throw new Error(`harness module ${name}: tools[${i}] needs a name and a run function`);
    return {
      name: tool.name,
      description: typeof tool.description === 'string' ? tool.description : '',
      parameters: tool.parameters ?? NO_PARAMETERS,
      run: tool.run as Tool['run'],
    };
  });
}

/** One capability function: a request to the shard on behalf of call `call`. */
function ask(call: number, capability: Capability) {
  return (...args: unknown[]): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const id = nextAsk++;
      asked.set(id, { resolve, reject });
      try {
        send({ t: 'cap', id, call, capability, args });
      } catch (err) {
        asked.delete(id); // arguments that cannot be cloned
        reject(err as Error);
      }
    });
}

/** The proxies a call's ctx holds: only the capabilities its harness was granted. */
function capabilities(call: number, granted: readonly Capability[]): Capabilities {
  const caps: Capabilities = {};
  if (granted.includes('peers.list')) caps.peers = { list: ask(call, 'peers.list') };
  if (granted.includes('sessions.search')) caps.sessions = { search: ask(call, 'sessions.search') };
  if (granted.includes('skills.list') || granted.includes('skills.get')) {
    caps.skills = {};
    if (granted.includes('skills.list')) caps.skills.list = ask(call, 'skills.list');
    if (granted.includes('skills.get')) caps.skills.get = ask(call, 'skills.get');
  }
  return caps;
}

async function describe(id: number, name: string): Promise<void> {
  try {
    const tools = await load(name);
    send({ t: 'reply', id, ok: true, value: tools.map(({ name, description, parameters }) => ({ name, description, parameters })) });
  } catch (err) {
    send({ t: 'reply', id, ok: false, message: message(err) });
  }
}

async function call(msg: Extract<ToHarness, { t: 'call' }>): Promise<void> {
  const controller = new AbortController();
  running.set(msg.id, controller);
  // An aborted call was answered by `abort`: a late outcome is not sent.
  const answer = (reply: FromHarness): void => {
    if (running.get(msg.id) === controller) send(reply);
  };
  try {
    const tool = (await load(msg.module)).find((t) => t.name === msg.tool);
    if (tool === undefined) throw new Error(`harness module ${msg.module} has no tool "${msg.tool}"`);
    const ctx: ToolContext = { agent: msg.agent, sender: msg.sender, signal: controller.signal, capabilities: capabilities(msg.id, msg.granted) };
    answer({ t: 'started', id: msg.id });
    answer({ t: 'reply', id: msg.id, ok: true, value: String(await tool.run(msg.args, ctx)) });
  } catch (err) {
    answer({ t: 'reply', id: msg.id, ok: false, message: message(err) });
  } finally {
    if (running.get(msg.id) === controller) running.delete(msg.id);
  }
}

/**
 * The turn was cancelled: abort the tool's signal and answer for it at once,
 * which tells the shard this thread is not stuck (a tool that ignores its
 * signal may leave work behind here, but holds no time limit).
 */
function abort(id: number, reason: string): void {
  const controller = running.get(id);
  if (controller === undefined) return;
  running.delete(id);
  controller.abort(new Error(reason));
  send({ t: 'reply', id, ok: false, message: reason });
}

port.on('message', (msg: ToHarness) => {
  switch (msg.t) {
    case 'describe':
      return void describe(msg.id, msg.module);
    case 'call':
      return void call(msg);
    case 'abort':
      return abort(msg.id, msg.reason);
    case 'cap_reply': {
      const waiting = asked.get(msg.id);
      asked.delete(msg.id);
      if (msg.ok) waiting?.resolve(msg.value);
      else waiting?.reject(new Error(msg.message));
    }
  }
});
