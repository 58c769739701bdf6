/**
 * What a lost shard (crashed, or terminated for stalling) owed: every
 * request it held gets its final frame (a stream its `start` if it had none,
 * then an `end` with the error; any other request one error frame), and the
 * turns it took with it are judged (lostVerdict): those it was running when
 * it froze are stored by its replacement as ended `stalled`.
 */
import { frameOf, FLAG_LAST, utf8Text } from '../../shared/codec.ts';
import { errorBody, streamBody } from '../../shared/wire/frames.ts';
import { Code } from '../../shared/errors.ts';
import { StopReason, zeroUsage, type EndEvent } from '../../shared/protocol.ts';
import type { StalledTurn } from '../../shared/threads/shard-messages.ts';
import { lostVerdict, type OpenTurn } from '../turn-ledger.ts';

/** How a request is answered if its shard dies: `stream` needs `start`+`end`, the others one error. */
export type RequestKind = 'stream' | 'rr';

/** A request whose LAST frame has not come back from its shard yet. */
export interface Inflight {
  conn: number;
  req: number;
  kind: RequestKind;
  agent: string;
  started: boolean;
  /** The turn's seq when the request is a turn. */
  turnSeq: number | null;
}

export interface ShardLoss {
  why: string;
  cause: 'crash' | 'stall';
  /** The turns the ledger had open on the shard. */
  turns: OpenTurn[];
  /** The seq of the turn the shard was running (its RUNNING heartbeat cell), 0 if none. */
  runningSeq: number;
  requests: Iterable<Inflight>;
}

/** Answers every request of a lost shard; calls `turnGone` for each of its turns; returns the turns to store as ended `stalled`. */
export function settleShardLoss(loss: ShardLoss, deliver: (conn: number, frames: Uint8Array) => void, turnGone: (t: OpenTurn) => void): StalledTurn[] {
  const { why, cause, runningSeq } = loss;
  const lost = new Map(loss.turns.map((t) => [t.seq, t]));
  const stalled: StalledTurn[] = [];
  for (const t of lost.values()) {
    if (lostVerdict(t, runningSeq, cause).recordStalled) {
      const { agent, sender, contentBytes, guest, turnId } = t.req;
      const content = contentBytes ? utf8Text(contentBytes) : t.req.content;
      stalled.push({ agent, sender, content, guest, turnId, error: why });
    }
    turnGone(t);
  }
  for (const f of loss.requests) {
    const turn = f.turnSeq === null ? null : lostVerdict(lost.get(f.turnSeq), runningSeq, cause);
    if (f.kind === 'stream') {
      if (!f.started) deliver(f.conn, frameOf(f.req, 0, streamBody('start', { agent: f.agent })));
      const end: EndEvent = { agent: f.agent, error: why, model: '', usage: zeroUsage(), stop_reason: turn?.stopReason ?? StopReason.Error };
      if (turn !== null) end.stored = turn.stored;
      deliver(f.conn, frameOf(f.req, FLAG_LAST, streamBody('end', end)));
    } else {
      const error = turn === null ? { code: Code.Internal, message: why } : { code: Code.Internal, message: why, stored: turn.stored };
      deliver(f.conn, frameOf(f.req, FLAG_LAST, errorBody(error)));
    }
  }
  return stalled;
}
