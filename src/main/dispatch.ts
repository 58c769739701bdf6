/**
 * The one dispatch function every transport calls (and the harness host, for
 * capability calls): it checks a client message's shape and hands it to its
 * operation's handler (src/main/ops/, one module per area). Main answers what
 * needs no shard; anything addressed to a pair goes down that pair's ordered
 * channel to its shard, which answers with frames it encodes itself.
 * Nothing here queues or throttles a request before its handler.
 */
import { AgentdError, Code, toWireError } from '../shared/errors.ts';
import { isPlainMap } from '../shared/args.ts';
import type { OperationName } from '../shared/wire/ops.ts';
import { errorBody, replyBody } from '../shared/wire/frames.ts';
import { ROUTED, type DispatchContext, type OpSpec, type Requester } from './ops/op-table.ts';
import { OpArgs } from './ops/op-args.ts';
import { adminOps } from './ops/admin.ts';
import { turnOps } from './ops/turns.ts';
import { conversationOps } from './ops/conversations.ts';
import { busOps } from './ops/bus.ts';
import { agentOps } from './ops/agents.ts';
import { mcpOps } from './ops/mcp.ts';
import { scheduleOps } from './ops/schedules.ts';
import { webhookOps } from './ops/webhooks.ts';
import { runOps } from './ops/runs.ts';
import { tokenOps } from './ops/tokens.ts';
import { transferOps } from './ops/transfer.ts';
import type { LimitLog } from './limit-log.ts';

export type { DispatchContext, Requester } from './ops/op-table.ts';

export type Dispatch = (from: Requester, req: number, body: Record<string, unknown>) => void;

const AREAS = [adminOps, turnOps, conversationOps, busOps, agentOps, mcpOps, scheduleOps, webhookOps, runOps, tokenOps, transferOps] as const;

/** The areas together handle every operation of the wire contract, each as the contract types it. */
type Handled = { readonly [Op in OperationName]: OpSpec<Op> };
const HANDLED: Handled = { ...adminOps, ...turnOps, ...conversationOps, ...busOps, ...agentOps, ...mcpOps, ...scheduleOps, ...webhookOps, ...runOps, ...tokenOps, ...transferOps };

/** Every operation dispatch serves, by name. */
export function operationNames(): string[] {
  return AREAS.flatMap((area) => Object.keys(area));
}

/** A handler as dispatch calls it: by a name only known at run time, so with its types erased. */
type AnyOpSpec = OpSpec<OperationName> & { handler: (...call: [DispatchContext, Requester, number, OpArgs<OperationName>]) => unknown };

function bindOperations(): Map<string, AnyOpSpec> {
  const ops = new Map<string, AnyOpSpec>();
  for (const area of AREAS) {
    for (const name of Object.keys(area)) {
      if (ops.has(name)) throw new Error(`operation "${name}" is registered twice`);
      ops.set(name, HANDLED[name as OperationName] as AnyOpSpec);
    }
  }
  return ops;
}

function notOneOperation(keys: string[]): AgentdError {
  const why = keys.length === 0 ? 'no operation' : `${keys.length} operations (${keys.slice(0, 4).join(', ')})`;
  return new AgentdError(Code.BadRequest, `a request holds exactly one operation; got ${why}`);
}

export function createDispatch(ctx: DispatchContext, limitLog: LimitLog | null = null): Dispatch {
  const ops = bindOperations();
  const fail = (from: Requester, req: number, err: unknown): void => {
    const error = toWireError(err);
    if (error.code === Code.TooMany) limitLog?.hit(error.message.replace(/\d+/g, 'N'), error.message, { connection: from.id });
    from.reply(req, errorBody(error));
  };

  return (from, req, body) => {
    const keys = Object.keys(body);
    if (keys.length !== 1) return fail(from, req, notOneOperation(keys));
    const name = keys[0]!;
    const spec = ops.get(name);
    if (spec === undefined) return fail(from, req, new AgentdError(Code.BadRequest, `unknown operation "${name}"`));
    if (!spec.duringShutdown && ctx.closing()) {
      return fail(from, req, new AgentdError(Code.ShuttingDown, 'the daemon is shutting down and takes no new work'));
    }
    const args = body[name];
    if (!isPlainMap(args)) return fail(from, req, new AgentdError(Code.BadRequest, `the argument of "${name}" must be a map`));
    const op = name as OperationName;
    const answer = (reply: unknown): void => from.reply(req, replyBody(op, reply as never));
    let out: unknown;
    try {
      out = spec.handler(ctx, from, req, new OpArgs(op, args));
    } catch (err) {
      return fail(from, req, err);
    }
    if (out === ROUTED) return;
    if (out instanceof Promise) {
      out.then(answer, (err: unknown) => fail(from, req, err));
      return;
    }
    answer(out);
  };
}
