/**
 * The shard's side of its harness thread: started at the first harness need,
 * with a sanitized environment; every request carries a time limit. A call
 * the turn cancels fails at once in the shard (its signal is forwarded to the
 * thread), and a call past its limit takes the thread down with it: the
 * thread is terminated, every call still in it fails with a clear error, and
 * the next request starts a fresh thread. A tool that loops synchronously
 * therefore never freezes the shard, which only ever waits on a message.
 *
 * Two clocks: starting the thread and importing a module may take up to
 * LOAD_TIMEOUT_MS; a tool's own limit (tool_timeout_ms) starts when the
 * thread says it is running the tool.
 *
 * PendingReplies, not comlink: a cancelled turn must stop waiting at once
 * and abort the tool's signal in the thread, and a call past its limit must
 * stop the thread; comlink can neither cancel a call nor time it.
 */
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import type { ToolSpec } from '../../models/types.ts';
import { toolSpecsFrom, type FromHarness, type HarnessThreadInit, type ToHarness } from '../../threads/harness/messages.ts';
import type { Capability } from '../../shared/config.ts';
import { PendingReplies, type CallTimeout } from '../../shared/threads/port-rpc.ts';

const FROM_SOURCE = import.meta.url.endsWith('.ts');
/** The most a thread start plus a module's import (and its top-level code) may take. */
export const LOAD_TIMEOUT_MS = 30_000;

const SCRIPT = fileURLToPath(new URL(FROM_SOURCE ? '../../threads/harness/harness-thread-bootstrap.mjs' : '../../threads/harness/harness-thread.js', import.meta.url));

/** One tool call: who it runs for is fixed here, by the shard, never by the thread. */
export interface HarnessCall {
  module: string;
  tool: string;
  args: unknown;
  agent: string;
  sender: string;
  granted: Capability[];
}

/** Answers a capability request of a running call (the grant is checked by the handler). */
export type CapabilityHandler = (call: HarnessCall, capability: string, args: unknown[]) => Promise<unknown>;

/** What the client keeps about a request in the thread; once its caller stops waiting, its time limit still guards the thread. */
interface InFlight {
  /** For messages: `tool "x" of harness module "m"`. */
  what: string;
  /** The tool's own limit, once it runs (`started`); unused by `describe`. */
  timeoutMs: number;
  /** false while the thread starts or imports the module (LOAD_TIMEOUT_MS applies). */
  running: boolean;
  /** null for a `describe`. */
  call: HarnessCall | null;
}

type Request = { t: 'describe'; module: string } | ({ t: 'call' } & HarnessCall);

export class HarnessThread {
  readonly #init: HarnessThreadInit;
  readonly #env: Record<string, string>;
  readonly #onCapability: CapabilityHandler;
  #worker: Worker | null = null;
  readonly #inFlight = new PendingReplies<unknown, InFlight>();

  constructor(home: string, env: Record<string, string>, onCapability: CapabilityHandler) {
    this.#init = { home };
    this.#env = env;
    this.#onCapability = onCapability;
  }

  /** Loads `module` in the thread and lists its tools (under the load limit only). */
  async describe(module: string): Promise<ToolSpec[]> {
    const value = await this.#request({ t: 'describe', module }, `loading harness module "${module}"`, 0, null).promise;
    return toolSpecsFrom(value, module);
  }

  /** Runs one tool in the thread; rejects at once with the abort reason when `signal` aborts. */
  async call(call: HarnessCall, timeoutMs: number, signal: AbortSignal): Promise<string> {
    signal.throwIfAborted();
    const { id, promise } = this.#request({ t: 'call', ...call }, `tool "${call.tool}" of harness module "${call.module}"`, timeoutMs, call);
    const onAbort = (): void => this.#abandon(id, signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const output = await promise;
      return typeof output === 'string' ? output : String(output);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  #request(req: Request, what: string, timeoutMs: number, call: HarnessCall | null): { id: number; promise: Promise<unknown> } {
    const worker = this.#thread();
    const { id, promise } = this.#inFlight.open({ what, timeoutMs, running: false, call }, this.#limit(LOAD_TIMEOUT_MS));
    this.#post(worker, { ...req, id } as ToHarness);
    return { id, promise };
  }

  #limit(ms: number): CallTimeout {
    return { ms, onExpiry: (id) => this.#timedOut(id) };
  }

  #thread(): Worker {
    if (this.#worker !== null) return this.#worker;
    const worker = new Worker(SCRIPT, { workerData: this.#init, env: this.#env });
    worker.unref(); // running calls keep their turns alive (their timers), not an idle thread
    worker.on('message', (msg: FromHarness) => this.#onMessage(worker, msg));
    worker.on('error', (err) => this.#lost(worker, `the harness thread failed: ${err.message}`));
    worker.on('exit', (code) => this.#lost(worker, `the harness thread exited (code ${code})`));
    this.#worker = worker;
    return worker;
  }

  #post(worker: Worker, msg: ToHarness): void {
    try {
      worker.postMessage(msg);
    } catch (err) {
      if ('id' in msg && msg.t !== 'cap_reply') this.#settle(msg.id, false, `cannot send to the harness thread: ${(err as Error).message}`);
    }
  }

  /** The caller's turn was cancelled: answer it now, and tell the thread to abort the tool's signal. */
  #abandon(id: number, reason: unknown): void {
    if (!this.#inFlight.awaited(id)) return;
    this.#inFlight.abandon(id, reason instanceof Error ? reason : new Error(String(reason)));
    if (this.#worker !== null) this.#post(this.#worker, { t: 'abort', id, reason: reason instanceof Error ? reason.message : String(reason) });
  }

  #settle(id: number, ok: boolean, value: unknown): void {
    if (ok) this.#inFlight.resolve(id, value);
    else this.#inFlight.reject(id, new Error(typeof value === 'string' ? value : 'harness error'));
  }

  #onMessage(worker: Worker, msg: FromHarness): void {
    if (worker !== this.#worker || typeof msg !== 'object' || msg === null || typeof msg.id !== 'number') return;
    if (msg.t === 'reply') this.#settle(msg.id, msg.ok === true, msg.ok === true ? msg.value : msg.message);
    else if (msg.t === 'started') this.#started(msg.id);
    else if (msg.t === 'cap') this.#capability(worker, msg);
  }

  /** The tool runs now: its own time limit replaces the load limit. */
  #started(id: number): void {
    const f = this.#inFlight.meta(id);
    if (f === undefined || f.running) return;
    f.running = true;
    this.#inFlight.retime(id, this.#limit(f.timeoutMs));
  }

  #capability(worker: Worker, msg: Extract<FromHarness, { t: 'cap' }>): void {
    const answer = (reply: ToHarness): void => {
      if (worker === this.#worker) this.#post(worker, reply);
    };
    const f = this.#inFlight.meta(msg.call);
    if (f?.call == null || !this.#inFlight.awaited(msg.call)) {
      return answer({ t: 'cap_reply', id: msg.id, ok: false, message: 'the tool call this capability was given to has ended' });
    }
    const args = Array.isArray(msg.args) ? msg.args : [];
    this.#onCapability(f.call, String(msg.capability), args).then(
      (value) => answer({ t: 'cap_reply', id: msg.id, ok: true, value }),
      (err: unknown) => answer({ t: 'cap_reply', id: msg.id, ok: false, message: err instanceof Error ? err.message : String(err) }),
    );
  }

  /** A request past its limit: the thread may be stuck in a loop, so it is terminated and replaced. */
  #timedOut(id: number): void {
    const f = this.#inFlight.meta(id);
    if (f === undefined || this.#worker === null) return;
    const late = f.running
      ? `${f.what} timed out after ${f.timeoutMs} ms (tool_timeout_ms); its harness thread was stopped`
      : `${f.what}: loading timed out after ${LOAD_TIMEOUT_MS} ms; its harness thread was stopped`;
    const others = `the harness thread was stopped because ${f.what} timed out`;
    const worker = this.#worker;
    this.#worker = null;
    void worker.terminate();
    this.#inFlight.rejectAll((failed) => new Error(failed === id ? late : others));
  }

  /** The thread died on its own (an uncaught error in harness code, say): fail what it held. */
  #lost(worker: Worker, message: string): void {
    if (worker !== this.#worker) return;
    this.#worker = null;
    this.#inFlight.rejectAll(() => new Error(message));
  }
}
