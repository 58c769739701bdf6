/**
 * `import_messages` at the pair's shard: one batch of a conversation's
 * messages, written at their positions through the same group commit as a
 * turn's. Positions already stored are skipped when they hold the same
 * message (a re-import adds nothing) and refused when they hold another; a
 * batch that would leave a gap is refused. The batch is one write: all of
 * its new messages or none.
 */
import { AgentdError, Code } from '../shared/errors.ts';
import type { ImportRequest } from '../shared/threads/shard-messages.ts';
import type { ImportReply } from '../shared/wire/transfer.ts';
import type { Message } from '../models/types.ts';
import type { ConversationStorage, TurnRecord } from '../storage/contract.ts';
import type { Conversation } from './conversation.ts';

/** Two messages are the same stored message when what a model and a reader see of them is the same. */
function same(a: Message, b: Message): boolean {
  return a.role === b.role && a.content === b.content && (a.tool_call_id ?? null) === (b.tool_call_id ?? null) && (a.name ?? null) === (b.name ?? null)
    && JSON.stringify(a.tool_calls ?? []) === JSON.stringify(b.tool_calls ?? []);
}

export async function importBatch(store: ConversationStorage, conv: Conversation | null, req: ImportRequest): Promise<ImportReply> {
  const stored = conv?.stored ?? 0;
  let dbId = conv?.dbId ?? null;
  if (req.from > stored) {
    throw new AgentdError(Code.Conflict, `the conversation of agent "${req.agent}" and sender "${req.sender}" holds ${stored} messages; this batch starts at position ${req.from}: import the messages from position ${stored} first`);
  }
  const overlap = Math.min(stored - req.from, req.messages.length);
  if (overlap > 0) {
    const existing = await store.allMessages(dbId!);
    for (let i = 0; i < overlap; i++) {
      if (!same(existing[req.from + i]!, req.messages[i]!)) {
        throw new AgentdError(Code.Conflict, `position ${req.from + i} of the conversation of agent "${req.agent}" and sender "${req.sender}" holds a different message: this is another conversation (delete it, or import into another store)`);
      }
    }
  }
  const fresh = req.messages.slice(overlap);
  if (fresh.length > 0) {
    const record: TurnRecord = { conv: { dbId, agent: req.agent, sender: req.sender, title: conv?.title || req.title || '', stored }, messages: fresh };
    const [failed] = await store.writeTurns([record]);
    if (failed) throw failed;
    dbId = record.conv.dbId;
  }
  if (req.summary !== null && dbId !== null) await store.setSummary(dbId, req.summary, req.summaryUpto);
  return { imported: fresh.length, skipped: overlap };
}
