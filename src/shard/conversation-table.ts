/**
 * A shard's conversations in memory, in least-recently-used order: put here
 * when created or loaded from storage (the scheduler loads them, in order,
 * through its PairGate), evicted (when idle) beyond the memory budget, which
 * is both a count of conversations and an approximate byte total.
 */
import type { ActiveConversation, ActiveQuery } from '../shared/threads/shard-messages.ts';
import { Conversation, pairKey, type ByteMeter } from './conversation.ts';
import type { StoredConversation } from '../storage/contract.ts';
import { callMeter } from './call-meter.ts';

export class ConversationTable {
  /** Whether conversations are stored: only then can an evicted one come back. */
  readonly #persistent: boolean;
  readonly #memoryBudget: number;
  readonly #bytesBudget: number;
  /** In least-recently-used order: a touched conversation moves to the end. */
  readonly #conversations = new Map<string, Conversation>();
  /** The approximate bytes of every conversation in the table (each adds its growth). */
  readonly #meter: ByteMeter = { total: 0 };

  /** `persistent` false: nothing is ever evicted (it could not come back). */
  constructor(persistent: boolean, memoryBudget: number, bytesBudget = Infinity) {
    this.#persistent = persistent;
    this.#memoryBudget = memoryBudget;
    this.#bytesBudget = bytesBudget;
  }

  get size(): number {
    return this.#conversations.size;
  }

  /** Approximate bytes the conversations in memory hold. */
  get bytes(): number {
    return this.#meter.total;
  }

  /** The pair's conversation if it is in memory, marked recently used. */
  find(agent: string, sender: string): Conversation | undefined {
    const key = pairKey(agent, sender);
    const conv = this.#conversations.get(key);
    if (conv !== undefined) {
      this.#conversations.delete(key);
      this.#conversations.set(key, conv);
    }
    return conv;
  }

  /** A new conversation for a pair that has none. */
  create(agent: string, sender: string): Conversation {
    return this.#insert(new Conversation(agent, sender));
  }

  /** A conversation just loaded from storage; a long history may push others out. */
  insertLoaded(agent: string, sender: string, stored: StoredConversation): Conversation {
    const loaded = this.#insert(new Conversation(agent, sender, stored));
    this.evict(loaded);
    return loaded;
  }

  #insert(conv: Conversation): Conversation {
    this.#conversations.set(pairKey(conv.agent, conv.sender), conv);
    conv.meter = this.#meter;
    this.#meter.total += conv.bytes;
    return conv;
  }

  #drop(key: string, conv: Conversation): void {
    this.#conversations.delete(key);
    conv.meter = null;
    this.#meter.total -= conv.bytes;
  }

  /** Forgets a deleted conversation: marked so that nothing more is written for it. */
  remove(conv: Conversation): void {
    conv.deleted = true;
    const key = pairKey(conv.agent, conv.sender);
    if (this.#conversations.get(key) === conv) this.#drop(key, conv);
  }

  /** Forgets (as `remove`) and returns every conversation of `agent`. */
  removeAgent(agent: string): Conversation[] {
    const gone = [...this.#conversations.values()].filter((c) => c.agent === agent);
    for (const conv of gone) this.remove(conv);
    return gone;
  }

  /**
   * Forgets the conversations `drop` picks (another node owns their pairs
   * now); they load again from the store when next asked for. Busy ones stay
   * until idle (`#stale`), so their running and queued turns end as they
   * would have (returned, for the caller to wait on).
   */
  forgetWhere(drop: (agent: string, sender: string) => boolean): Conversation[] {
    const busy: Conversation[] = [];
    for (const [key, conv] of [...this.#conversations]) {
      if (!drop(conv.agent, conv.sender)) continue;
      if (conv.busy) {
        this.#stale.add(conv);
        busy.push(conv);
      } else this.#drop(key, conv);
    }
    return busy;
  }

  /** Busy conversations to forget once idle (forgetWhere). */
  readonly #stale = new Set<Conversation>();

  /**
   * Drops least-recently-used idle conversations while over either budget;
   * they come back from storage. `keep` (one just loaded) stays.
   */
  evict(keep: Conversation | null = null): void {
    for (const conv of [...this.#stale]) {
      if (conv.busy) continue;
      this.#stale.delete(conv);
      const key = pairKey(conv.agent, conv.sender);
      if (this.#conversations.get(key) === conv) this.#drop(key, conv);
    }
    if (!this.#persistent) return;
    let evicted = 0;
    for (const [key, conv] of this.#conversations) {
      if (!this.#overBudget()) break;
      if (conv.busy || conv === keep) continue; // a running or queued conversation is never evicted
      this.#drop(key, conv);
      evicted++;
    }
    if (evicted > 0) callMeter.evicted(evicted);
  }

  #overBudget(): boolean {
    return this.#conversations.size > this.#memoryBudget || this.#meter.total > this.#bytesBudget;
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
        queued: c.queued,
        memory_bytes: c.bytes,
      });
    }
    return out;
  }
}
