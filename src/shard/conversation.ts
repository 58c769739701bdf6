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

/**
 * A short history is kept in an array of exactly its length: an array grown
 * by push keeps at least 16 spare slots, more than a two-message
 * conversation's own. Past this length appends push (amortized), so a turn's
 * cost does not grow with its conversation.
 */
const EXACT_HISTORY_UP_TO = 32;

/** Conversations' creation times are kept as seconds from here: a small integer, where milliseconds since 1970 would box a number per conversation. */
const CREATED_EPOCH_MS = Date.UTC(2020, 0, 1);

const DELETED = 1;
const TRANSIENT = 2;

/**
 * Many idle conversations stay in memory, so what each holds is kept small:
 * no queue until a job waits, flags in one small integer, no private methods
 * (each class with one gives every instance a brand field).
 */
export class Conversation {
  readonly agent: string;
  readonly sender: string;
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
  /** Jobs waiting behind the running one; null while none. */
  #queue: Fifo<Job> | null = null;
  /** DELETED and TRANSIENT. */
  #flags: number;
  /** Seconds since CREATED_EPOCH_MS. */
  readonly #createdSecs: number;
  /** Approximate memory `history` holds (see messageBytes). */
  bytes = 0;
  /** The table's meter while it is in a table: changes in `bytes` are added to it. */
  meter: ByteMeter | null = null;
  /** Tokens of the model's latest call (prompt and reply), for automatic compaction; null when unknown. */
  contextTokens: number | null = null;

  /** `transient`: an ephemeral turn's conversation: fresh history, nothing stored, in no table. */
  constructor(agent: string, sender: string, stored: StoredConversation | null = null, transient = false) {
    this.agent = agent;
    this.sender = sender;
    this.#flags = transient ? TRANSIENT : 0;
    this.#createdSecs = Math.floor(((stored === null ? Date.now() : Date.parse(stored.createdAt)) - CREATED_EPOCH_MS) / 1000);
    if (stored !== null) {
      this.dbId = stored.id;
      this.stored = stored.messageCount;
      this.title = stored.title;
      setHistory(this, stored.summary === null ? stored.recent : [summaryMessage(stored.summary), ...stored.recent]);
    }
  }

  /** When it was created (stored: when its row was), in milliseconds since 1970, to the second. */
  get createdAt(): number {
    return CREATED_EPOCH_MS + this.#createdSecs * 1000;
  }

  /** An ephemeral turn's: fresh history, nothing stored, in no table. */
  get transient(): boolean {
    return (this.#flags & TRANSIENT) !== 0;
  }

  /** Set by delete: nothing more is written for it. */
  get deleted(): boolean {
    return (this.#flags & DELETED) !== 0;
  }

  set deleted(value: boolean) {
    this.#flags = value ? this.#flags | DELETED : this.#flags & ~DELETED;
  }

  get busy(): boolean {
    return this.running !== null || this.queued > 0;
  }

  /** Jobs waiting behind the running one. */
  get queued(): number {
    return this.#queue === null ? 0 : this.#queue.size;
  }

  enqueue(job: Job): void {
    (this.#queue ??= new Fifo()).push(job);
  }

  /** The next waiting job, taken off the queue; the queue goes once empty. */
  takeNext(): Job | undefined {
    const next = this.#queue?.shift();
    if (this.#queue !== null && this.#queue.size === 0) this.#queue = null;
    return next;
  }

  /** Takes every waiting job off the queue, in order. */
  drainQueue(): Job[] {
    const all = this.#queue === null ? [] : this.#queue.drain();
    this.#queue = null;
    return all;
  }

  /** Takes the waiting jobs `pred` picks off the queue, keeping the others in order. */
  removeQueued(pred: (job: Job) => boolean): Job[] {
    if (this.#queue === null) return [];
    const removed = this.#queue.removeWhere(pred);
    if (this.#queue.size === 0) this.#queue = null;
    return removed;
  }

  /** Appends a finished turn's messages; the first user message names the conversation. */
  append(messages: readonly Message[]): void {
    let added = 0;
    for (const m of messages) {
      if (this.title === '' && m.role === 'user') this.title = titleOf(m.content);
      added += messageBytes(m);
    }
    if (this.history.length + messages.length <= EXACT_HISTORY_UP_TO) this.history = this.history.concat(messages);
    else for (const m of messages) this.history.push(m);
    grow(this, added);
    this.stored += messages.length;
  }

  /** After a compaction the model sees the summary instead of everything before it. */
  compacted(summary: string): void {
    setHistory(this, [summaryMessage(summary)]);
  }
}

function setHistory(conv: Conversation, history: Message[]): void {
  conv.history = history;
  grow(conv, history.reduce((sum, m) => sum + messageBytes(m), 0) - conv.bytes);
}

function grow(conv: Conversation, delta: number): void {
  conv.bytes += delta;
  if (conv.meter !== null) conv.meter.total += delta;
}

/**
 * A conversation's title: the start of its first user message, copied when
 * cut, so that the title does not keep the whole message alive (a cut string
 * can point into the one it was cut from) once a compaction dropped it.
 */
function titleOf(content: string): string {
  if (content.length <= TITLE_CHARS) return content;
  return Buffer.from(content.slice(0, TITLE_CHARS), 'utf16le').toString('utf16le');
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

/** Agents' key prefixes, so that the pairs of one agent share theirs (see pairKey); bounded, as agent names come from requests too. */
const keyPrefixes = new Map<string, string>();
const MAX_KEY_PREFIXES = 1024;

/**
 * A pair's key in a table: the agent's shared prefix joined to the sender.
 * V8 keeps a longer joined string as two parts pointing at the prefix and
 * the sender, so a key held by a table costs one small string header; a
 * prefix made per call would cost a string per key.
 */
export function pairKey(agent: string, sender: string): string {
  let prefix = keyPrefixes.get(agent);
  if (prefix === undefined) {
    prefix = `${agent}\u0000`;
    if (keyPrefixes.size < MAX_KEY_PREFIXES) keyPrefixes.set(agent, prefix);
  }
  return prefix + sender;
}
