/**
 * Where the schedule engine keeps its table: the daemon's store, through the
 * storage threads (storage/schedule-calls.ts), or, with persistence off, a
 * map in memory that answers the same calls.
 */
import type { StoragePool } from '../hosts/storage-pool.ts';
import type { InsertResult, ScheduleCall, ScheduleRecord } from '../../storage/schedule-calls.ts';

export interface ScheduleStore {
  call<T>(c: ScheduleCall): Promise<T>;
}

export function storedSchedules(storage: StoragePool): ScheduleStore {
  return { call: <T>(c: ScheduleCall) => storage.run<T>({ op: 'schedules', call: c }) };
}

/** Persistence off: one node, nothing survives a restart. */
export class MemorySchedules implements ScheduleStore {
  readonly #rows = new Map<string, ScheduleRecord & { claim_node: string | null }>();

  call<T>(c: ScheduleCall): Promise<T> {
    return Promise.resolve(this.#answer(c) as T);
  }

  #answer(c: ScheduleCall): unknown {
    const row = 'name' in c ? this.#rows.get(c.name) : undefined;
    switch (c.call) {
      case 'insert': {
        const result: InsertResult = this.#rows.has(c.record.name) ? 'exists' : this.#rows.size >= c.max ? 'full' : 'ok';
        if (result === 'ok') this.#rows.set(c.record.name, { ...c.record, claim_node: null });
        return result;
      }
      case 'delete':
        return this.#rows.delete(c.name);
      case 'list':
        return [...this.#rows.values()].sort((a, b) => (a.name < b.name ? -1 : 1)).map(copy);
      case 'get':
        return row === undefined ? null : copy(row);
      case 'claim':
        if (row === undefined || row.next_at !== c.due || (row.claim_until !== null && row.claim_until >= c.now)) return false;
        row.claim_node = c.node;
        row.claim_until = c.until;
        return true;
      case 'fired':
        if (row === undefined || row.next_at !== c.due || row.claim_node !== c.node) return false;
        if (c.next === null) return this.#rows.delete(c.name);
        Object.assign(row, { next_at: c.next, last_fired_at: c.due, fires: row.fires + 1, claim_node: null, claim_until: null });
        return true;
      case 'skip':
        if (row === undefined || row.next_at !== c.due || row.claim_until !== null) return false;
        if (c.next === null) return this.#rows.delete(c.name);
        row.next_at = c.next;
        return true;
    }
  }
}

function copy(r: ScheduleRecord & { claim_node?: string | null }): ScheduleRecord {
  const { claim_node: _node, ...record } = r;
  return record;
}
