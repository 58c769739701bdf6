/**
 * One conversation held by a shard: what the model sees of its history, its
 * FIFO of waiting jobs (turns and compactions) and the job running now. Jobs
 * of one pair run one at a time, in the order they arrived.
 */
import type { CompactRequest, TurnRequest } from '../shared/threads/shard-messages.ts';
import { Fifo } from './fifo.ts';
import type { Message } from '../models/types.ts';
import type { Cancellation } from './turn/cancellation.ts';
import type { StoredConversation } from '../storage/contract.ts';
import type { TurnReply } from './turn/turn-reply.ts';
import type { LoopState } from './turn/loop-state.ts';

export const TITLE_CHARS = 80;
/** What one message costs in memory beyond its text: the object, its fields, the array slot (an estimate). */
export const MESSAGE_OVERHEAD_BYTES = 120;

/** The running total of the bytes a table's conversations hold; a conversation adds its growth to it. */
export interface ByteMeter {
  total: number;
}
export const SUMMARY_PREFIX = 'Summary of the conversation so far:\n';

/** A turn from arrival to its last frame. */
export interface Turn {
  readonly kind: 'turn';
  readonly req: TurnRequest;
  readonly cancel: Cancellation;
  /** An ephemeral turn gets a transient conversation of its own, in no table. */
  readonly conv: Conversation;
  /** The one reply of this turn, from refusal or queueing to its end. */
  readonly reply: TurnReply;
  /** A stored waiting run resumed: where its loop stood. */
  readonly resume?: LoopState | null;
}

export interface CompactJob {
  readonly kind: 'compact';
  readonly req: CompactRequest;
  readonly cancel: Cancellation;
  readonly conv: Conversation;
}

export type Job = Turn | CompactJob;

export class Conversation {
  readonly agent: string;
  readonly sender: string;
  readonly createdAt: number;
  /** Row id once stored; null until the first turn is written (or with persistence off). */
  dbId: number | null = null;
  /** Messages stored so far (the next message's index). */
  stored = 0;
  /** What the model sees: the summary (if compacted) then the messages since. */
  history: Message[] = [];
  title = '';
  running: Job | null = null;
  /** Settles when the running job has sent its last frame. */
  runningDone: Promise<void> | null = null;
  readonly queue = new Fifo<Job>();
  /** Set by delete: nothing more is written for it. */
  deleted = false;
  /** An ephemeral turn's: fresh history, nothing stored, in no table. */
  readonly transient: boolean;
  /** Approximate memory `history` holds (see messageBytes). */
  bytes = 0;
  /** The table's meter while it is in a table: changes in `bytes` are added to it. */
  meter: ByteMeter | null = null;
  /** Tokens of the model's latest call (prompt and reply), for automatic compaction; null when unknown. */
  contextTokens: number | null = null;

  constructor(agent: string, sender: string, stored: StoredConversation | null = null, transient = false) {
    this.agent = agent;
    this.sender = sender;
    this.transient = transient;
    this.createdAt = stored === null ? Date.now() : Date.parse(stored.createdAt);
    if (stored !== null) {
      this.dbId = stored.id;
      this.stored = stored.messageCount;
      this.title = stored.title;
      this.#setHistory(stored.summary === null ? stored.recent : [summaryMessage(stored.summary), ...stored.recent]);
    }
  }

  get busy(): boolean {
    return this.running !== null || this.queue.size > 0;
  }

  /** Appends a finished turn's messages; the first user message names the conversation. */
  append(messages: readonly Message[]): void {
    for (const m of messages) {
      if (this.title === '' && m.role === 'user') this.title = m.content.slice(0, TITLE_CHARS);
      this.history.push(m);
      this.#grow(messageBytes(m));
    }
    this.stored += messages.length;
  }

  /** After a compaction the model sees the summary instead of everything before it. */
  compacted(summary: string): void {
    this.#setHistory([summaryMessage(summary)]);
  }

  #setHistory(history: Message[]): void {
    this.history = history;
    this.#grow(history.reduce((sum, m) => sum + messageBytes(m), 0) - this.bytes);
  }

  #grow(delta: number): void {
    this.bytes += delta;
    if (this.meter !== null) this.meter.total += delta;
  }
}

/** A message's approximate size in memory: its strings at two bytes a character, plus a fixed overhead. */
export function messageBytes(m: Message): number {
  let chars = m.content.length + (m.tool_call_id?.length ?? 0) + (m.name?.length ?? 0) + (m.agent?.length ?? 0);
  for (const call of m.tool_calls ?? []) chars += call.id.length + call.name.length + call.arguments.length;
  return chars * 2 + MESSAGE_OVERHEAD_BYTES;
}

export function summaryMessage(summary: string): Message {
  return { role: 'system', content: SUMMARY_PREFIX + summary };
}

export function pairKey(agent: string, sender: string): string {
  return `${agent}\u0000${sender}`;
}
