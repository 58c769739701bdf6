/**
 * `get_conversation_history` in a shard: a conversation's messages from
 * memory when all of them are there, else read from the store in the
 * connection's paced turn (PacedReads), so one client's history reads do not
 * hold up the shard's other work.
 */
import { Code } from '../shared/errors.ts';
import type { PairRequest } from '../shared/threads/shard-messages.ts';
import type { HistoryMessage } from '../shared/wire/ops.ts';
import type { Message } from '../models/types.ts';
import type { ConversationStorage } from '../storage/contract.ts';
import type { Conversation } from './conversation.ts';
import type { FrameOut } from './outbox.ts';
import type { PacedReads } from './paced-reads.ts';
import { errorTo, replyTo } from './job-runner.ts';

export interface HistoryReads {
  outbox: FrameOut;
  /** null: persistence is off, and the history is what memory holds. */
  store: ConversationStorage | null;
  reads: PacedReads;
}

/** A message as `get_conversation_history` shows it: `agent` only on a guest's, `stop_reason` only on a stalled turn's record. */
function historyMessage(m: Message): HistoryMessage {
  // With persistence off, a compacted history starts with its summary as a `system` message, a role the contract does not list.
  const shown: HistoryMessage = { role: m.role as HistoryMessage['role'], content: m.content };
  if (m.agent !== undefined) shown.agent = m.agent;
  if (m.stop_reason !== undefined) shown.stop_reason = m.stop_reason;
  return shown;
}

function sendHistory(x: HistoryReads, req: PairRequest, title: string, messages: readonly Message[]): void {
  replyTo(x.outbox, req, 'get_conversation_history', { agent: req.agent, sender: req.sender, title, messages: messages.map(historyMessage) });
}

/** Answers `req` with the conversation's whole history (the caller has checked that it exists). */
export function readHistory(x: HistoryReads, req: PairRequest, conv: Conversation): void {
  const { title, dbId } = conv;
  const store = x.store;
  if (dbId === null || store === null) return sendHistory(x, req, title, conv.history);
  x.reads.add({
    conn: req.conn,
    run: () =>
      void store.allMessages(dbId).then(
        (messages) => sendHistory(x, req, title, messages),
        (err: unknown) => errorTo(x.outbox, req, Code.Internal, `reading the history failed: ${err instanceof Error ? err.message : String(err)}`),
      ),
    drop: () => errorTo(x.outbox, req, Code.Cancelled, 'the connection closed before the history was read'),
  });
}
