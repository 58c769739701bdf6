/**
 * Automatic compaction: before a turn would send its model more history than
 * the agent's `compact_threshold` (tokens), the conversation is compacted
 * first, as `compact` would, and the turn's stream says so (`compacted`).
 * What the history costs is known without walking it: the tokens the model
 * reported for the conversation's last call, or, before any call (a
 * conversation loaded from storage, or just compacted), an estimate from the
 * bytes the conversation already counts.
 */
import type { AgentConfig } from '../../shared/config.ts';
import type { Logger } from '../../shared/log.ts';
import type { Usage } from '../../shared/protocol.ts';
import type { Model } from '../../models/types.ts';
import { compactThreshold } from '../../models/context-windows.ts';
import type { ConversationStorage } from '../../storage/contract.ts';
import { MESSAGE_OVERHEAD_BYTES, type Conversation, type Turn } from '../conversation.ts';
import type { Emit } from './agent-loop.ts';
import { summarize } from './compaction.ts';

/** Characters per token, the usual rule of thumb for English text and code. */
const CHARS_PER_TOKEN = 4;

/** The tokens the conversation's history would cost the model now. */
export function historyTokens(conv: Conversation): number {
  if (conv.contextTokens !== null) return conv.contextTokens;
  // conv.bytes counts each message as its characters at 2 bytes plus a fixed overhead.
  const chars = Math.max(0, conv.bytes - conv.history.length * MESSAGE_OVERHEAD_BYTES) / 2;
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/** The turn's emitter, also keeping the tokens of the model's latest call on the conversation. */
export function trackingContext(conv: Conversation, emit: Emit): Emit {
  return (event, body) => {
    if (event === 'context_usage') {
      const usage = body.usage as Usage;
      conv.contextTokens = usage.prompt_tokens + usage.completion_tokens;
    }
    emit(event, body);
  };
}

export interface AutoCompaction {
  store: ConversationStorage | null;
  log: Logger;
}

/**
 * Compacts the turn's conversation first when its history and the new message
 * would pass the agent's threshold. A failed compaction is logged and the turn
 * goes on with the whole history: a turn is never lost to its housekeeping.
 */
export async function compactBeforeTurn(turn: Turn, config: AgentConfig, model: Model, deps: AutoCompaction): Promise<void> {
  const { conv, req, cancel, reply } = turn;
  const threshold = compactThreshold(config);
  if (threshold === 0 || conv.transient || conv.history.length < 2) return;
  const tokens = historyTokens(conv) + Math.ceil(req.content.length / CHARS_PER_TOKEN);
  if (tokens <= threshold) return;
  try {
    const summary = await summarize(model, config, conv.history, null, cancel, 'auto');
    if (conv.deleted) return;
    if (conv.dbId !== null) await deps.store?.setSummary(conv.dbId, summary, conv.stored);
    conv.compacted(summary);
    conv.contextTokens = null;
    reply.event('compacted', { tokens_before: tokens, summary });
  } catch (err) {
    if (!cancel.aborted) deps.log.warn({ agent: req.agent, err: (err as Error).message }, 'automatic compaction failed: the turn goes on with the whole history');
  }
}
