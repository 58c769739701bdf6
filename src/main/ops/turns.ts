/** Turns: `stream` and `send` run a turn on the pair's shard; `kill` cancels the pair's turns. */
import { AgentdError, Code } from '../../shared/errors.ts';
import { MAX_TURN_ID_BYTES, OnBusy } from '../../shared/protocol.ts';
import { turnRequest, type TurnFields } from '../turn-request.ts';
import { ContentBytes } from '../net/request-body.ts';
import { commonView, type OpArgs } from './op-args.ts';
import { op, ROUTED, type DispatchContext, type OpTable, type Requester } from './op-table.ts';

type TurnOp = 'stream' | 'send';

/** The client's idempotency key for a turn: absent or empty means none; at most 64 bytes. */
function turnId(args: OpArgs<TurnOp>): string | null {
  const id = args.optStr('turn_id');
  if (id !== null && Buffer.byteLength(id) > MAX_TURN_ID_BYTES) {
    throw new AgentdError(Code.BadRequest, `${args.op}.turn_id must be at most ${MAX_TURN_ID_BYTES} bytes`);
  }
  return id;
}

/** The turn's text, or its bytes when main left a big one undecoded (request-body.ts). */
function content(args: OpArgs<TurnOp>): string | ContentBytes {
  const raw = args.raw('content');
  return raw instanceof ContentBytes ? raw : args.str('content');
}

/** What only a stream takes: guests, ephemeral turns and correlation ids. */
type StreamOnly = Pick<TurnFields, 'guest' | 'ephemeral' | 'correlationId'>;

const streamOnly = (args: OpArgs<'stream'>): StreamOnly => ({
  guest: args.optStr('guest'),
  ephemeral: args.optBool('ephemeral') ?? false,
  correlationId: args.optUint('correlation_id') ?? null,
});

const SEND_ONLY: StreamOnly = { guest: null, ephemeral: false, correlationId: null };

/** `streamFields` runs between `content` and `on_busy`, so a bad request is refused for the same field as ever. */
function runTurn(ctx: DispatchContext, from: Requester, req: number, args: OpArgs<TurnOp>, streamFields: () => StreamOnly): typeof ROUTED {
  args.refuse(['cwd', 'tools'], 'the daemon reads no client filesystem and clients declare no tools');
  const mode = args.op;
  const msg = turnRequest({
    conn: from.id,
    req,
    mode,
    agent: args.knownAgent(ctx.agents, 'agent'),
    sender: args.writingSender('sender', ctx.defaultSender),
    content: content(args),
    ...streamFields(),
    onBusy: args.optEnum('on_busy', OnBusy) ?? 'enqueue',
    toolChoice: args.toolChoice('tool_choice'),
    turnId: turnId(args),
    detach: args.optBool('detach') ?? false,
  });
  ctx.pool.requestTurn(msg, mode === 'stream' ? 'stream' : 'rr');
  return ROUTED;
}

export const turnOps: OpTable<TurnOp | 'kill'> = {
  stream: op((ctx, from, req, args) => runTurn(ctx, from, req, commonView<TurnOp>(args), () => streamOnly(args))),
  send: op((ctx, from, req, args) => runTurn(ctx, from, req, commonView<TurnOp>(args), () => SEND_ONLY)),
  kill: op((ctx, from, req, args) => {
    const agent = args.nonEmptyStr('agent');
    const sender = args.sender('sender', ctx.defaultSender);
    if (!ctx.agents.has(agent)) throw new AgentdError(Code.NotFound, `no conversation for agent "${agent}" and sender "${sender}"`);
    ctx.pool.requestFor({ type: 'kill', conn: from.id, req, agent, sender }, 'rr');
    return ROUTED;
  }),
};
