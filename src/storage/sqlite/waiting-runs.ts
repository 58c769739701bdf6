/**
 * The waiting_runs table in SQLite (schema step 11): a shard's rare writes,
 * on its own connection under the shared write lock, committed before the
 * call returns (the client hears `approval_required` only after it).
 */
import type { Db } from './db.ts';
import type { WriteLock } from './write-lock.ts';
import type { WaitingRunRecord } from '../contract.ts';

interface WaitingRunRow {
  run_id: string;
  agent: string;
  sender: string;
  created_at: number;
  state: string;
}

export class SqliteWaitingRuns {
  readonly #lock: WriteLock;
  readonly #save;
  readonly #delete;
  readonly #all;

  constructor(db: Db, lock: WriteLock) {
    this.#lock = lock;
    this.#save = db.prepare<[string, string, string, number, number, string]>(
      `INSERT INTO waiting_runs (run_id, agent, sender, created_at, updated_at, state) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (run_id) DO UPDATE SET updated_at = excluded.updated_at, state = excluded.state`,
    );
    this.#delete = db.prepare<[string]>('DELETE FROM waiting_runs WHERE run_id = ?');
    this.#all = db.prepare<[], WaitingRunRow>('SELECT run_id, agent, sender, created_at, state FROM waiting_runs ORDER BY created_at, run_id');
  }

  save(r: WaitingRunRecord): void {
    this.#lock.with(() => this.#save.run(r.runId, r.agent, r.sender, r.createdAt, Date.now(), r.state));
  }

  delete(runId: string): void {
    this.#lock.with(() => this.#delete.run(runId));
  }

  all(): WaitingRunRecord[] {
    return this.#all.all().map((r) => ({ runId: r.run_id, agent: r.agent, sender: r.sender, createdAt: Number(r.created_at), state: r.state }));
  }
}
