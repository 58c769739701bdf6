/**
 * ConversationStorage held in memory: a real, small implementation of the
 * storage contract for unit tests of the shard's logic (the real backends get
 * the end-to-end tests). `gateLoads()` makes each `load` wait until the test
 * releases it, to prove what happens while a conversation is loading.
 */
import { StopReason, zeroUsage } from '../../src/shared/protocol.ts';
import type { StalledTurn } from '../../src/shared/threads/shard-messages.ts';
import type { Message } from '../../src/models/types.ts';
import type { ConversationStorage, StoredConversation, TurnOutcome, TurnRecord, WaitingRunRecord } from '../../src/storage/contract.ts';

interface Row {
  id: number;
  agent: string;
  sender: string;
  title: string;
  createdAt: string;
  summary: string | null;
  summaryUpto: number;
  messages: Message[];
  outcomes: Map<string, TurnOutcome>;
}

export class MemoryStorage implements ConversationStorage {
  readonly #rows = new Map<number, Row>();
  #nextId = 1;
  /** Every call, by method name, in order. */
  readonly calls: string[] = [];
  #gated = false;
  readonly #heldLoads: (() => void)[] = [];

  /** From now on a `load` resolves only once `releaseLoads` is called. */
  gateLoads(): void {
    this.#gated = true;
  }

  /** Lets every held `load` finish (with what is stored then, or with `failure`). */
  releaseLoads(failure: Error | null = null): void {
    this.#gated = false;
    this.#failure = failure;
    for (const release of this.#heldLoads.splice(0)) release();
  }

  #failure: Error | null = null;

  #find(agent: string, sender: string): Row | undefined {
    return [...this.#rows.values()].find((r) => r.agent === agent && r.sender === sender);
  }

  load(agent: string, sender: string): Promise<StoredConversation | null> {
    this.calls.push('load');
    const read = (): StoredConversation | null => {
      if (this.#failure !== null) throw this.#failure;
      const r = this.#find(agent, sender);
      if (r === undefined) return null;
      const { id, title, createdAt, summary, summaryUpto } = r;
      return { id, title, createdAt, summary, summaryUpto, messageCount: r.messages.length, recent: r.messages.slice(summaryUpto) };
    };
    if (!this.#gated) return Promise.resolve().then(read);
    return new Promise<void>((resolve) => this.#heldLoads.push(resolve)).then(read);
  }

  async exists(agent: string, sender: string): Promise<boolean> {
    this.calls.push('exists');
    return this.#find(agent, sender) !== undefined;
  }

  /** Waiting runs by run id (insertion order is creation order). */
  readonly waiting = new Map<string, WaitingRunRecord>();

  async saveWaitingRun(run: WaitingRunRecord): Promise<void> {
    this.calls.push('saveWaitingRun');
    this.waiting.set(run.runId, { ...run });
  }

  async deleteWaitingRun(runId: string): Promise<void> {
    this.calls.push('deleteWaitingRun');
    this.waiting.delete(runId);
  }

  async waitingRuns(): Promise<WaitingRunRecord[]> {
    return [...this.waiting.values()];
  }

  async allMessages(id: number): Promise<Message[]> {
    this.calls.push('allMessages');
    return [...(this.#rows.get(id)?.messages ?? [])];
  }

  async writeTurns(turns: readonly TurnRecord[]): Promise<(Error | null)[]> {
    this.calls.push('writeTurns');
    return turns.map(({ conv, messages, outcome }) => {
      let row = conv.dbId === null ? undefined : this.#rows.get(conv.dbId);
      if (row === undefined) {
        const title = conv.title || (messages.find((m) => m.role === 'user')?.content ?? '');
        row = { id: this.#nextId++, agent: conv.agent, sender: conv.sender, title, createdAt: new Date().toISOString(), summary: null, summaryUpto: 0, messages: [], outcomes: new Map() };
        this.#rows.set(row.id, row);
      }
      if (row.messages.length !== conv.stored) return new Error(`stored ${row.messages.length} messages, the turn expected ${conv.stored}`);
      row.messages.push(...messages);
      if (outcome) row.outcomes.set(outcome.turnId, outcome);
      conv.dbId = row.id;
      return null;
    });
  }

  async outcome(conversationId: number, turnId: string): Promise<TurnOutcome | null> {
    this.calls.push('outcome');
    return this.#rows.get(conversationId)?.outcomes.get(turnId) ?? null;
  }

  async setSummary(id: number, summary: string, upto: number): Promise<void> {
    this.calls.push('setSummary');
    const row = this.#rows.get(id);
    if (row !== undefined) Object.assign(row, { summary, summaryUpto: upto });
  }

  async delete(id: number): Promise<void> {
    this.calls.push('delete');
    this.#rows.delete(id);
  }

  async recordStalled(t: StalledTurn): Promise<void> {
    this.calls.push('recordStalled');
    const row = this.#find(t.agent, t.sender);
    if (row !== undefined && t.turnId !== null && row.outcomes.has(t.turnId)) return;
    const conv = { dbId: row?.id ?? null, agent: t.agent, sender: t.sender, title: row?.title ?? '', stored: row?.messages.length ?? 0 };
    const outcome = t.turnId === null ? null : { turnId: t.turnId, agent: t.guest ?? t.agent, model: '', stopReason: StopReason.Stalled, error: t.error, usage: zeroUsage(), finalText: '' };
    await this.writeTurns([{ conv, messages: [{ role: 'user', content: t.content }, { role: 'assistant', content: '', stop_reason: StopReason.Stalled }], outcome }]);
  }

  async close(): Promise<void> {}
}
