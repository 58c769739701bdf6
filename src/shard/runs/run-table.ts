/**
 * A shard's runs: every turn of its pairs from queued until
 * `run_retention_ms` after its end, by run id. Ended runs are forgotten in
 * the order they ended, once past retention or past MAX_ENDED_RUNS (checked
 * whenever a run opens or is looked up, so nothing needs a timer).
 */
import { Code } from '../../shared/errors.ts';
import { RunIds } from '../../shared/wire/run-id.ts';
import type { RunListQuery, RunRequest } from '../../shared/threads/shard-messages.ts';
import type { RunInfo } from '../../shared/wire/runs.ts';
import { streamBody } from '../../shared/wire/frames.ts';
import type { StreamEventName } from '../../shared/wire/ops.ts';
import { Fifo } from '../fifo.ts';
import type { FrameOut } from '../outbox.ts';
import { errorTo, replyTo } from '../job-runner.ts';
import { Run, type RunEnds } from './run.ts';

/** Ended runs one shard remembers at most (the oldest are forgotten first). */
export const MAX_ENDED_RUNS = 10_000;

/** Whether the run's pair is within a request's `only_pair` (null: any run). */
function within(run: Run, only: RunRequest['onlyPair']): boolean {
  if (only === null) return true;
  return (only.agents === null || only.agents.includes(run.agent)) && (only.sender === null || only.sender === run.sender);
}

export class RunTable implements RunEnds {
  readonly #runs = new Map<string, Run>();
  readonly #ended = new Fifo<Run>();
  readonly #ids = new RunIds();
  /** Running runs someone joined: a closed connection's joiners are looked for only here. */
  readonly #joined = new Set<Run>();
  readonly #out: FrameOut;
  readonly #retentionMs: number;

  constructor(out: FrameOut, retentionMs: number) {
    this.#out = out;
    this.#retentionMs = retentionMs;
  }

  /** A turn was queued: its run begins. */
  open(agent: string, sender: string, detached: boolean): Run {
    this.#prune();
    const run = new Run(this.#ids.next(agent, sender), agent, sender, detached, this);
    this.#runs.set(run.id, run);
    return run;
  }

  /** A stored waiting run resumes under its own id, its frames numbered after `seq` (see Run); null when this shard holds it already. */
  restore(id: string, agent: string, sender: string, detached: boolean, createdAt: number, seq: number, storedSeq: number): Run | null {
    if (this.#runs.has(id)) return null;
    const run = new Run(id, agent, sender, detached, this, seq, storedSeq);
    run.createdAt = createdAt;
    this.#runs.set(id, run);
    return run;
  }

  ended(run: Run): void {
    this.#ended.push(run);
    this.#joined.delete(run);
  }

  get(id: string): Run | undefined {
    this.#prune();
    return this.#runs.get(id);
  }

  handle(msg: RunRequest): void {
    const run = this.get(msg.runId);
    // A run outside the request's `only_pair` is answered exactly as none: nothing of it goes out, not even that it exists.
    if (run === undefined || !within(run, msg.onlyPair)) return errorTo(this.#out, msg, Code.NotFound, `no run "${msg.runId}" (unknown, or ended more than run_retention_ms ago)`);
    if (msg.type === 'get_run') return replyTo(this.#out, msg, 'get_run', run.info());
    if (msg.type === 'join_run') return this.#join(run, msg);
    if (!run.approve(msg.callId!, msg.approve!, msg.reason ?? null)) {
      return errorTo(this.#out, msg, Code.Conflict, `run "${run.id}" is not waiting for an approval of call "${msg.callId}"`);
    }
    replyTo(this.#out, msg, 'approve_tool', {});
  }

  /** This shard's runs matching the query, newest first, at most `limit`. */
  list(q: RunListQuery): RunInfo[] {
    this.#prune();
    const found: RunInfo[] = [];
    const all = [...this.#runs.values()];
    for (let i = all.length - 1; i >= 0 && found.length < q.limit; i--) {
      const r = all[i]!;
      if ((q.agent === null || r.agent === q.agent) && (q.sender === null || r.sender === q.sender) && (q.status === null || r.status === q.status)) found.push(r.info());
    }
    return found;
  }

  /** The connection closed: its joins end (the runs go on). */
  connClosed(conn: number): void {
    for (const run of this.#joined) {
      const gone = run.joiners?.filter((j) => j.conn === conn) ?? [];
      if (gone.length === 0) continue;
      run.joiners = run.joiners!.filter((j) => j.conn !== conn);
      if (run.joiners.length === 0) this.#dropJoined(run);
      for (const j of gone) errorTo(this.#out, j, Code.Cancelled, 'connection closed');
    }
  }

  /** Sends the kept frames after `afterSeq`, then follows the run live until its end. */
  #join(run: Run, msg: RunRequest): void {
    const out = this.#out;
    if (run.kept === null) return errorTo(out, msg, Code.Conflict, `run "${run.id}" is not detached: only a run started with detach: true (or a turn_id) keeps its frames to join`);
    const { conn, req } = msg;
    // Everything kept up to now, then live: one thread, so no frame falls between the two.
    const sent = { last: false };
    const replayed = run.kept.replay(msg.afterSeq, {
      event: (name, body) => {
        sent.last = name === 'end';
        out.frame(conn, req, sent.last, streamBody(name as StreamEventName, body as never));
      },
      text: (name, content, seq) => out.textDelta(conn, req, name, content, seq),
    });
    if (!replayed) return errorTo(out, msg, Code.Conflict, `run "${run.id}" no longer keeps the frames after seq ${msg.afterSeq} (at most the last 65536 frames and 16 Mi characters are kept)`);
    out.started(conn, req);
    if (sent.last) return;
    if (run.ended) return this.#endAgain(run, msg);
    (run.joiners ??= []).push({ conn, req });
    this.#joined.add(run);
  }

  /** A join after the end's own seq: the stream still ends with `end`, sent again. */
  #endAgain(run: Run, msg: RunRequest): void {
    const end = { seq: run.seq } as Record<string, unknown>;
    run.kept!.replay(run.seq - 1, { event: (_name, body) => Object.assign(end, body), text: () => {} });
    this.#out.frame(msg.conn, msg.req, true, streamBody('end', end as never));
  }

  #dropJoined(run: Run): void {
    run.joiners = null;
    this.#joined.delete(run);
  }

  #prune(): void {
    const oldest = Date.now() - this.#retentionMs;
    for (let r = this.#ended.peek(); r !== undefined && (r.endedAt <= oldest || this.#ended.size > MAX_ENDED_RUNS); r = this.#ended.peek()) {
      this.#ended.shift();
      this.#runs.delete(r.id);
    }
  }
}
