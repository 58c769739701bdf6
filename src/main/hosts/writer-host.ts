/**
 * Main's side of the turn writer thread (threads/writer/writer-thread.ts), SQLite
 * only: starts it, hands each shard a port to it (`portForShard`), watches
 * its heartbeat as the shards' are watched, and replaces it when it crashes
 * or freezes. A lost writer's ports close, so every shard answers the
 * batches still waiting on it with an error at once; once the replacement is
 * started, `onReplaced` has every live shard given a port to it.
 */
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import type { Logger } from '../../shared/log.ts';
import type { ResolvedConfig } from '../../shared/config.ts';
import { Heartbeat } from '../../shared/threads/heartbeat.ts';
import { WRITER_TOKEN, WriteLock } from '../../storage/sqlite/write-lock.ts';
import { WRITER_CRASH_TOKEN_ENV, WRITER_STALL_TOKEN_ENV, type FromWriter, type ToWriter, type WriterInit } from '../../threads/writer/messages.ts';
import { ShardWatchdog } from './shard-watchdog.ts';
import { workerScript } from './worker-script.ts';

/** How long shutdown waits for the writer to close its connection before terminating it. */
const CLOSE_TIMEOUT_MS = 5_000;
/** A replacement that died before it was ready is tried again after this long, not in a tight loop. */
const RETRY_MS = 1_000;

export interface WriterHostOptions {
  path: string;
  writeLock: SharedArrayBuffer;
  logLevel: string;
  log: Logger;
  /** A writer whose event loop does not answer for this long is replaced (the shards' stall time). */
  stallMs: number;
  crashToken: string | null;
  stallToken: string | null;
}

export class WriterHost {
  readonly #o: WriterHostOptions;
  readonly #watchdog: ShardWatchdog;
  #worker: Worker | null = null;
  #generation = 0;
  #closing = false;
  /** The first writer ran: from then on a lost one is replaced (a failed first start fails the daemon's). */
  #started = false;
  #closedWaiter: (() => void) | null = null;
  #replaced: () => void = () => undefined;
  /** Ports handed to shards while no writer ran. */
  readonly #unserved: MessagePort[] = [];

  private constructor(opts: WriterHostOptions) {
    this.#o = opts;
    this.#watchdog = new ShardWatchdog(opts.stallMs, () => this.#onStall());
  }

  /** Starts the writer; resolves once it runs (rejects if it dies first). */
  static async start(opts: WriterHostOptions): Promise<WriterHost> {
    const host = new WriterHost(opts);
    await host.#spawn();
    host.#started = true;
    return host;
  }

  /** Called once a replacement writer is started: give every live shard `portForShard()`. */
  onReplaced(fn: () => void): void {
    this.#replaced = fn;
  }

  /** A fresh port to the current writer for a shard (and for each replacement shard). */
  portForShard(): MessagePort {
    const { port1, port2 } = new MessageChannel();
    // Between a frozen writer's termination and its replacement, the port waits for the replacement.
    if (this.#worker === null) this.#unserved.push(port1);
    else this.#worker.postMessage({ type: 'port', port: port1 } satisfies ToWriter, [port1]);
    return port2;
  }

  #spawn(): Promise<void> {
    const generation = ++this.#generation;
    const heartbeat = new SharedArrayBuffer(Heartbeat.CELLS * Int32Array.BYTES_PER_ELEMENT);
    const cells = new Int32Array(heartbeat);
    const { path, writeLock, logLevel, crashToken, stallToken } = this.#o;
    const init: WriterInit = { path, writeLock, logLevel, heartbeat, heartbeatMs: this.#watchdog.intervalMs, crashToken, stallToken };
    const worker = new Worker(workerScript('writer-thread'), { workerData: init });
    this.#worker = worker;
    for (const port of this.#unserved.splice(0)) worker.postMessage({ type: 'port', port } satisfies ToWriter, [port]);
    return new Promise<void>((resolve, reject) => {
      let ready = false;
      worker.on('message', (msg: FromWriter) => {
        if (msg.type === 'closed') return this.#closedWaiter?.();
        ready = true;
        if (!this.#closing && this.#generation === generation) this.#watchdog.watch(0, cells);
        resolve();
      });
      worker.on('error', (err) => this.#o.log.error({ err }, 'the turn writer crashed'));
      worker.on('exit', (code) => {
        if (!ready) reject(new Error(`the turn writer exited with code ${code} during start-up`));
        if (this.#closing || !this.#started || this.#generation !== generation) return;
        this.#worker = null;
        this.#watchdog.unwatch(0);
        this.#replace(`the turn writer exited with code ${code}`, ready ? 0 : RETRY_MS);
      });
    });
  }

  /** A frozen writer: terminated, then replaced (its pending batches fail as its ports close). */
  #onStall(): void {
    const worker = this.#worker;
    if (this.#closing || worker === null) return;
    this.#generation++; // its exit is not taken for a crash
    this.#worker = null;
    this.#o.log.error({ stall_ms: this.#o.stallMs }, 'the turn writer stalled: replacing it');
    void worker.terminate().finally(() => this.#replace('the turn writer stalled', 0));
  }

  #replace(why: string, delayMs: number): void {
    // Only now, with the writer gone: it could still have been holding the lock.
    WriteLock.releaseFor(this.#o.writeLock, WRITER_TOKEN);
    if (this.#closing) return;
    this.#o.log.warn({ why }, 'turn writer lost: its pending turns ended with an error; starting a replacement');
    const timer = setTimeout(() => {
      if (this.#closing) return;
      this.#spawn().then(
        () => this.#o.log.info('replacement turn writer ready'),
        (err: unknown) => this.#o.log.error({ err }, 'replacement turn writer failed to start; trying again'),
      );
      this.#replaced();
    }, delayMs);
    timer.unref();
  }

  /** After the shards are gone: the writer closes its connection, then the thread stops. Idempotent. */
  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    this.#watchdog.stop();
    const worker = this.#worker;
    if (worker === null) return;
    const closed = new Promise<void>((resolve) => (this.#closedWaiter = resolve));
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage({ type: 'shutdown' } satisfies ToWriter);
    const timer = setTimeout(() => this.#closedWaiter?.(), CLOSE_TIMEOUT_MS);
    await Promise.race([closed, exited]);
    clearTimeout(timer);
    await worker.terminate();
  }
}

/** Starts the thread that commits every shard's turns (SQLite), once the store is prepared. */
export function startWriter(config: ResolvedConfig, path: string, writeLock: SharedArrayBuffer, log: Logger): Promise<WriterHost> {
  const crashToken = process.env[WRITER_CRASH_TOKEN_ENV] || null;
  const stallToken = process.env[WRITER_STALL_TOKEN_ENV] || null;
  if (crashToken !== null || stallToken !== null) log.warn(`${WRITER_CRASH_TOKEN_ENV} or ${WRITER_STALL_TOKEN_ENV} is set: turn writer fault injection is on (tests only)`);
  return WriterHost.start({ path, writeLock, logLevel: config.logLevel, log, stallMs: config.shardStallMs, crashToken, stallToken });
}
