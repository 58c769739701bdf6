/** Turns: `stream` and `send` run a turn on the pair's shard; `kill` cancels the pair's turns. */
import { AgentdError, Code } from '../../shared/errors.ts';
import { MAX_TURN_ID_BYTES, OnBusy } from '../../shared/protocol.ts';
import type { Args } from '../../shared/args.ts';
import { turnRequest } from '../turn-request.ts';
import { ContentBytes } from '../net/request-body.ts';
import { op, ROUTED, type ArgReader, type Handler, type OpTable } from './op-table.ts';

/** The client's idempotency key for a turn: absent or empty means none; at most 64 bytes. */
function turnId(read: ArgReader, args: Args): string | null {
  const id = read.optStr(args, 'turn_id');
  if (id !== null && Buffer.byteLength(id) > MAX_TURN_ID_BYTES) {
    throw new AgentdError(Code.BadRequest, `${read.op}.turn_id must be at most ${MAX_TURN_ID_BYTES} bytes`);
  }
  return id;
}

/** The turn's text, or its bytes when main left a big one undecoded (request-body.ts). */
function content(read: ArgReader, args: Args): string | ContentBytes {
  return args.content instanceof ContentBytes ? args.content : read.str(args, 'content');
}

const runTurn =
  (mode: 'stream' | 'send'): Handler =>
  (ctx, from, req, args, read) => {
    read.refuse(args, ['cwd', 'tools'], 'the daemon reads no client filesystem and clients declare no tools');
    const streaming = mode === 'stream';
    const msg = turnRequest({
      conn: from.id,
      req,
      mode,
      agent: read.knownAgent(ctx, args),
      sender: read.sender(ctx, args),
      content: content(read, args),
      // Guests, ephemeral turns and correlation ids only make sense on a stream.
      guest: streaming ? read.optStr(args, 'guest') : null,
      ephemeral: streaming ? (read.optBool(args, 'ephemeral') ?? false) : false,
      correlationId: streaming ? (read.optUint(args, 'correlation_id') ?? null) : null,
      onBusy: read.optEnum(args, 'on_busy', OnBusy) ?? 'enqueue',
      toolChoice: read.toolChoice(args),
      turnId: turnId(read, args),
    });
    ctx.pool.requestTurn(msg, streaming ? 'stream' : 'rr');
    return ROUTED;
  };

export const turnOps: OpTable = {
  stream: op(runTurn('stream')),
  send: op(runTurn('send')),
  kill: op((ctx, from, req, args, read) => {
    const agent = read.nonEmptyStr(args, 'agent');
    const sender = read.sender(ctx, args);
    if (!ctx.agents.has(agent)) throw new AgentdError(Code.NotFound, `no conversation for agent "${agent}" and sender "${sender}"`);
    ctx.pool.requestFor({ type: 'kill', conn: from.id, req, agent, sender }, 'rr');
    return ROUTED;
  }),
};
