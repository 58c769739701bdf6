/**
 * A shard's conversations in memory, in least-recently-used order: loaded
 * from storage when touched, evicted (when idle) beyond the memory budget.
 */
import type { ActiveConversation, ActiveQuery } from '../shared/threads.ts';
import { Conversation, pairKey } from './conversation.ts';
import type { ConversationStore } from './store.ts';

export class ConversationTable {
  readonly #store: ConversationStore | null;
  readonly #memoryBudget: number;
  /** In least-recently-used order: a touched conversation moves to the end. */
  readonly #conversations = new Map<string, Conversation>();

  /** `store` null: persistence is off, and nothing is ever evicted (it could not come back). */
  constructor(store: ConversationStore | null, memoryBudget: number) {
    this.#store = store;
    this.#memoryBudget = memoryBudget;
  }

  get size(): number {
    return this.#conversations.size;
  }

  /** The pair's conversation if it is in memory, without touching its place. */
  peek(agent: string, sender: string): Conversation | undefined {
    return this.#conversations.get(pairKey(agent, sender));
  }

  /** The pair's conversation: in memory, else from storage, else null. Marks it recently used. */
  find(agent: string, sender: string): Conversation | null {
    const key = pairKey(agent, sender);
    const conv = this.#conversations.get(key);
    if (conv !== undefined) {
      this.#conversations.delete(key);
      this.#conversations.set(key, conv);
      return conv;
    }
    const stored = this.#store?.load(agent, sender) ?? null;
    return stored === null ? null : this.#insert(new Conversation(agent, sender, stored));
  }

  /** As `find`, but a pair with no conversation gets a new one. */
  findOrCreate(agent: string, sender: string): Conversation {
    return this.find(agent, sender) ?? this.#insert(new Conversation(agent, sender));
  }

  #insert(conv: Conversation): Conversation {
    this.#conversations.set(pairKey(conv.agent, conv.sender), conv);
    return conv;
  }

  /** Forgets a deleted conversation: marked so that nothing more is written for it. */
  remove(conv: Conversation): void {
    conv.deleted = true;
    this.#conversations.delete(pairKey(conv.agent, conv.sender));
  }

  /** Forgets (as `remove`) and returns every conversation of `agent`. */
  removeAgent(agent: string): Conversation[] {
    const gone = [...this.#conversations.values()].filter((c) => c.agent === agent);
    for (const conv of gone) this.remove(conv);
    return gone;
  }

  /** Drops least-recently-used idle conversations beyond the budget; they come back from storage. */
  evict(): void {
    if (this.#store === null) return;
    let excess = this.#conversations.size - this.#memoryBudget;
    if (excess <= 0) return;
    for (const [key, conv] of this.#conversations) {
      if (excess <= 0) break;
      if (conv.busy) continue; // a running or queued conversation is never evicted
      this.#conversations.delete(key);
      excess--;
    }
  }

  active(q: ActiveQuery): ActiveConversation[] {
    const now = Date.now();
    const out: ActiveConversation[] = [];
    for (const c of this.#conversations.values()) {
      if ((q.agent !== null && c.agent !== q.agent) || (q.sender !== null && c.sender !== q.sender)) continue;
      out.push({
        agent: c.agent,
        sender: c.sender,
        message_count: c.stored,
        alive_secs: Math.floor((now - c.createdAt) / 1000),
        title: c.title,
        running: c.running !== null,
        queued: c.queue.size,
      });
    }
    return out;
  }
}
