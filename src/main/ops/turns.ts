/** Turns: `stream` and `send` run a turn on the pair's shard; `kill` cancels the pair's turns. */
import { AgentdError, Code } from '../../shared/errors.ts';
import { OnBusy } from '../../shared/protocol.ts';
import { turnRequest } from '../turn-request.ts';
import { op, ROUTED, type Handler, type OpTable } from './op-table.ts';

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
      content: read.str(args, 'content'),
      // Guests, ephemeral turns and correlation ids only make sense on a stream.
      guest: streaming ? read.optStr(args, 'guest') : null,
      ephemeral: streaming ? (read.optBool(args, 'ephemeral') ?? false) : false,
      correlationId: streaming ? (read.optUint(args, 'correlation_id') ?? null) : null,
      onBusy: read.optEnum(args, 'on_busy', OnBusy) ?? 'enqueue',
      toolChoice: read.toolChoice(args),
    });
    ctx.pool.requestFor(msg, streaming ? 'stream' : 'rr');
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
