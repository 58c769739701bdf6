/**
 * A retried turn answered from storage: a turn whose turn_id is stored for
 * the pair does not run again (PROTOCOL §4.1, Retries). `stream` gets
 * `start`, the stored final text as one `chunk`, and the stored `end` marked
 * `replayed` (TurnReply.replayed sends them); `send` gets the stored
 * response (or the stored failure's error).
 */
import { Code } from '../../shared/errors.ts';
import { StopReason, type EndEvent } from '../../shared/protocol.ts';
import { errorBody, replyBody, type ErrorBody, type ReplyBody } from '../../shared/wire/frames.ts';
import type { TurnOutcome } from '../../storage/contract.ts';

export function replayedEnd(o: TurnOutcome): EndEvent {
  return { agent: o.agent, error: o.error, model: o.model, usage: o.usage, stop_reason: o.stopReason, replayed: true };
}

/** What `send` answered (or would have) when the turn first ran. */
export function storedAnswer(o: TurnOutcome): ReplyBody<'send'> | ErrorBody {
  if (o.stopReason === StopReason.Cancelled) return errorBody({ code: Code.Cancelled, message: o.error || 'cancelled' });
  if (o.stopReason === StopReason.Error || o.stopReason === StopReason.Stalled) return errorBody({ code: Code.Internal, message: o.error });
  return replyBody('send', { agent: o.agent, content: o.finalText, model: o.model, usage: o.usage, replayed: true });
}
