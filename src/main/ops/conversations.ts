/**
 * Conversations: pair operations go to the pair's shard (in its order, after
 * its turns); lists and searches over all conversations go to the storage pool.
 */
import { SEARCH_LIMITS } from '../../shared/protocol.ts';
import { AgentdError, Code } from '../../shared/errors.ts';
import type { SearchOptions, StorageTask } from '../../threads/storage/messages.ts';
import type { ReplyOf } from '../../shared/wire/ops.ts';
import { commonView, type OpArgs } from './op-args.ts';
import { op, ROUTED, type DispatchContext, type OpTable, type Requester } from './op-table.ts';

type StoredRead = 'list_conversations';

type PairOp = 'get_conversation_history' | 'delete_conversation';

/** The shard answers: the history, or the pong once the conversation is deleted. */
function routeToPair(ctx: DispatchContext, from: Requester, req: number, args: OpArgs<PairOp>, type: 'history' | 'delete'): typeof ROUTED {
  ctx.pool.requestFor({ type, conn: from.id, req, agent: args.knownAgent(ctx.agents, 'agent'), sender: args.sender('sender', ctx.defaultSender) }, 'rr');
  return ROUTED;
}

/** Runs a read on the storage pool; with persistence off there is nothing stored, so `empty`. */
function stored<Op extends StoredRead>(ctx: DispatchContext, task: StorageTask & { op: Op }, empty: ReplyOf<Op>): ReplyOf<Op> | Promise<ReplyOf<Op>> {
  return ctx.storage === null ? empty : ctx.storage.run<ReplyOf<Op>>(task);
}

/** A search runs on the storage pool's search lane, within search_timeout_ms; `from` disconnecting cancels it. */
function searchSessions(ctx: DispatchContext, from: Requester, args: OpArgs<'search_sessions'>): ReplyOf<'search_sessions'> | Promise<ReplyOf<'search_sessions'>> {
  const query = args.str('query');
  if (Buffer.byteLength(query) > SEARCH_LIMITS.maxQueryBytes) {
    throw new AgentdError(Code.BadRequest, `search_sessions.query must be at most ${SEARCH_LIMITS.maxQueryBytes} bytes of UTF-8`);
  }
  const none = { hits: [] };
  const options: SearchOptions = {
    query,
    limit: Math.min(SEARCH_LIMITS.maxLimit, Math.max(1, args.optUint('limit') ?? SEARCH_LIMITS.defaultLimit)),
    contextBefore: args.optUint('context_before') ?? SEARCH_LIMITS.defaultContext,
    contextAfter: args.optUint('context_after') ?? SEARCH_LIMITS.defaultContext,
    agent: args.optStr('agent'),
    sender: args.optStr('sender'),
  };
  if (query.trim() === '' || ctx.storage === null) return none;
  return ctx.storage.search(options, from.id) as Promise<ReplyOf<'search_sessions'>>;
}

type Ordered = { agent: string; sender: string };
const byPair = (a: Ordered, b: Ordered): number => (a.agent === b.agent ? (a.sender < b.sender ? -1 : 1) : a.agent < b.agent ? -1 : 1);

type ConversationOp = 'compact' | 'get_conversation_history' | 'delete_conversation' | 'list_conversations' | 'search_sessions' | 'list_active_conversations';

export const conversationOps: OpTable<ConversationOp> = {
  compact: op((ctx, from, req, args) => {
    const agent = args.knownAgent(ctx.agents, 'agent');
    ctx.pool.requestFor({ type: 'compact', conn: from.id, req, agent, sender: args.sender('sender', ctx.defaultSender), prompt: args.optStr('prompt') }, 'rr');
    return ROUTED;
  }),
  get_conversation_history: op((ctx, from, req, args) => routeToPair(ctx, from, req, commonView<PairOp>(args), 'history')),
  delete_conversation: op((ctx, from, req, args) => routeToPair(ctx, from, req, commonView<PairOp>(args), 'delete')),
  list_conversations: op((ctx, _from, _req, args) =>
    stored(ctx, { op: 'list_conversations', agent: args.optStr('agent'), sender: args.optStr('sender') }, { conversations: [] }),
  ),
  search_sessions: op((ctx, from, _req, args) => searchSessions(ctx, from, args)),
  list_active_conversations: op(async (ctx, _from, _req, args) => {
    const conversations = await ctx.pool.activeConversations(args.optStr('agent'), args.optStr('sender'));
    conversations.sort(byPair);
    return { conversations };
  }),
};
