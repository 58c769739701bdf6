/**
 * Answers a retried turn from storage: a turn whose turn_id is stored for the
 * pair does not run again (PROTOCOL §4.1, Retries). `stream` gets `start`, the
 * stored final text as one `chunk`, and the stored `end` marked `replayed`;
 * `send` gets the stored response (or the stored failure's error). Nothing is
 * stored, published on the bus or shown to observers: the turn happened once.
 */
import { Code } from '../../shared/errors.ts';
import { StopReason, type EndEvent } from '../../shared/protocol.ts';
import type { TurnRequest } from '../../shared/threads/shard-messages.ts';
import type { FrameOut } from '../outbox.ts';
import { errorBody, replyBody, streamBody, type ErrorBody, type ReplyBody } from '../../shared/wire/frames.ts';
import type { TurnOutcome } from '../../storage/contract.ts';

export function replayTurn(out: FrameOut, req: TurnRequest, o: TurnOutcome): void {
  const end: EndEvent = { agent: o.agent, error: o.error, model: o.model, usage: o.usage, stop_reason: o.stopReason, replayed: true };
  if (req.mode === 'stream') {
    out.started(req.conn, req.req);
    out.frame(req.conn, req.req, false, streamBody('start', { agent: o.agent }));
    if (o.finalText !== '') out.textDelta(req.conn, req.req, 'chunk', o.finalText);
    out.frame(req.conn, req.req, true, streamBody('end', end));
  } else if (req.mode === 'send') {
    out.frame(req.conn, req.req, true, sendReply(o));
  }
  out.turnEnded(req.seq, o.stopReason);
}

/** What `send` answered (or would have) when the turn first ran. */
function sendReply(o: TurnOutcome): ReplyBody<'send'> | ErrorBody {
  if (o.stopReason === StopReason.Cancelled) return errorBody({ code: Code.Cancelled, message: o.error || 'cancelled' });
  if (o.stopReason === StopReason.Error || o.stopReason === StopReason.Stalled) return errorBody({ code: Code.Internal, message: o.error });
  return replyBody('send', { agent: o.agent, content: o.finalText, model: o.model, usage: o.usage, replayed: true });
}
