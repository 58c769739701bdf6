/**
 * Conversations: pair operations go to the pair's shard (in its order, after
 * its turns); lists and searches over all conversations go to the storage pool.
 */
import { SEARCH_LIMITS } from '../../shared/protocol.ts';
import { AgentdError, Code } from '../../shared/errors.ts';
import type { StorageTask } from '../../threads/storage/messages.ts';
import type { Args } from '../../shared/args.ts';
import { op, ROUTED, type ArgReader, type DispatchContext, type Handler, type OpTable } from './op-table.ts';

const pairOp =
  (type: 'history' | 'delete'): Handler =>
  (ctx, from, req, args, read) => {
    ctx.pool.requestFor({ type, conn: from.id, req, agent: read.knownAgent(ctx, args), sender: read.sender(ctx, args) }, 'rr');
    return ROUTED;
  };

/** Runs a read on the storage pool; with persistence off there is nothing stored, so `empty`. */
function stored(ctx: DispatchContext, task: StorageTask, empty: unknown): unknown {
  return ctx.storage === null ? empty : ctx.storage.run(task);
}

function searchSessions(ctx: DispatchContext, args: Args, read: ArgReader): unknown {
  const query = read.str(args, 'query');
  if (Buffer.byteLength(query) > SEARCH_LIMITS.maxQueryBytes) {
    throw new AgentdError(Code.BadRequest, `search_sessions.query must be at most ${SEARCH_LIMITS.maxQueryBytes} bytes of UTF-8`);
  }
  const none = { session_hits: { hits: [] } };
  const task: StorageTask = {
    op: 'search_sessions',
    query,
    limit: Math.min(SEARCH_LIMITS.maxLimit, Math.max(1, read.optUint(args, 'limit') ?? SEARCH_LIMITS.defaultLimit)),
    contextBefore: read.optUint(args, 'context_before') ?? SEARCH_LIMITS.defaultContext,
    contextAfter: read.optUint(args, 'context_after') ?? SEARCH_LIMITS.defaultContext,
    agent: read.optStr(args, 'agent'),
    sender: read.optStr(args, 'sender'),
  };
  return query.trim() === '' ? none : stored(ctx, task, none);
}

type Ordered = { agent: string; sender: string };
const byPair = (a: Ordered, b: Ordered): number => (a.agent === b.agent ? (a.sender < b.sender ? -1 : 1) : a.agent < b.agent ? -1 : 1);

export const conversationOps: OpTable = {
  compact: op((ctx, from, req, args, read) => {
    const agent = read.knownAgent(ctx, args);
    ctx.pool.requestFor({ type: 'compact', conn: from.id, req, agent, sender: read.sender(ctx, args), prompt: read.optStr(args, 'prompt') }, 'rr');
    return ROUTED;
  }),
  get_conversation_history: op(pairOp('history')),
  delete_conversation: op(pairOp('delete')),
  list_conversations: op((ctx, _from, _req, args, read) =>
    stored(ctx, { op: 'list_conversations', agent: read.optStr(args, 'agent'), sender: read.optStr(args, 'sender') }, { conversation_list: { conversations: [] } }),
  ),
  search_sessions: op((ctx, _from, _req, args, read) => searchSessions(ctx, args, read)),
  list_active_conversations: op(async (ctx, _from, _req, args, read) => {
    const conversations = await ctx.pool.activeConversations(read.optStr(args, 'agent'), read.optStr(args, 'sender'));
    conversations.sort(byPair);
    return { active_conversations: { conversations } };
  }),
};
