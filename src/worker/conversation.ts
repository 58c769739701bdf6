/**
 * One conversation held by a shard: its history, its FIFO of waiting turns
 * and the turn running now. Turns of one pair run one at a time, in order.
 */
import type { TurnRequest } from '../shared/threads.ts';
import { Fifo } from './fifo.ts';
import type { Message } from './models/types.ts';
import type { Cancellation } from './cancellation.ts';

export const TITLE_CHARS = 80;

/** A turn from arrival to its last frame. */
export interface Turn {
  readonly req: TurnRequest;
  readonly cancel: Cancellation;
  /** null for ephemeral turns, which belong to no conversation. */
  readonly conv: Conversation | null;
}

export class Conversation {
  readonly agent: string;
  readonly sender: string;
  readonly createdAt = Date.now();
  readonly history: Message[] = [];
  title = '';
  running: Turn | null = null;
  readonly queue = new Fifo<Turn>();

  constructor(agent: string, sender: string) {
    this.agent = agent;
    this.sender = sender;
  }

  get busy(): boolean {
    return this.running !== null || this.queue.size > 0;
  }

  /** Appends a finished turn's messages; the first user message names the conversation. */
  append(messages: readonly Message[]): void {
    for (const m of messages) {
      if (this.title === '' && m.role === 'user') this.title = m.content.slice(0, TITLE_CHARS);
      this.history.push(m);
    }
  }
}

export function pairKey(agent: string, sender: string): string {
  return `${agent}\u0000${sender}`;
}
