/**
 * Holds each request to what its sender's token may do, before it goes
 * anywhere (on a cluster node, before it is forwarded): the operation's
 * scope (scope-table.ts), then the token's binding to agents and a sender.
 * A request refused gets 403 naming what it lacks; a request of a bound token
 * that leaves out its sender is given the token's, so a counterparty's token
 * speaks as itself without saying so. A request by run id carries the
 * token's binding on as `only_pair`, checked where the run lives.
 */
import { AgentdError, Code } from '../../shared/errors.ts';
import { isPlainMap } from '../../shared/args.ts';
import type { OperationName } from '../../shared/wire/ops.ts';
import { errorBody } from '../../shared/wire/frames.ts';
import type { Dispatch } from '../dispatch.ts';
import type { Principal } from './principal.ts';
import { SCOPE_TABLE, type Binding } from './scope-table.ts';

const forbidden = (message: string): AgentdError => new AgentdError(Code.Forbidden, message);
const quoted = (s: string): string => JSON.stringify(s.slice(0, 100));

/** The arguments as they go on: the same map, or a copy with the token's sender (or agent) filled in. */
type Args = Record<string, unknown>;

function checkScope(p: Principal, op: OperationName): void {
  const { scopes } = SCOPE_TABLE[op];
  if (scopes === 'any' || p.scopes.includes('admin') || scopes.some((s) => p.scopes.includes(s))) return;
  throw forbidden(`this token lacks the ${scopes.map((s) => `"${s}"`).join(' or ')} scope: ${op} needs it`);
}

function checkAgent(p: Principal, op: string, agent: unknown): void {
  if (p.agents === null || typeof agent !== 'string') return; // a non-string is the handler's 400
  if (!p.agents.includes(agent)) throw forbidden(`this token may not address agent ${quoted(agent)} (${op}): it is bound to ${p.agents.map(quoted).join(', ')}`);
}

/** The token's sender when the request names none; 403 when it names another. */
function withSender(p: Principal, op: string, args: Args): Args {
  if (p.sender === null) return args;
  const sender = args.sender;
  if (sender === undefined || sender === null || sender === '') return { ...args, sender: p.sender };
  if (sender !== p.sender) throw forbidden(`this token speaks only as sender ${quoted(p.sender)}, not ${quoted(String(sender))} (${op})`);
  return args;
}

/** An optional agent filter: the token's one agent when absent; refused when the token has several. */
function withAgent(p: Principal, op: string, args: Args, field: 'agent' | 'name'): Args {
  if (p.agents === null) return args;
  const agent = args[field];
  if (agent !== undefined && agent !== null && agent !== '') return (checkAgent(p, op, agent), args);
  if (p.agents.length === 1) return { ...args, [field]: p.agents[0] };
  throw forbidden(`this token is bound to agents ${p.agents.map(quoted).join(', ')}: ${op} must name one of them in "${field}"`);
}

function bound(p: Principal, op: OperationName, args: Args, binding: Binding): Args {
  switch (binding.kind) {
    case 'free':
      return args;
    case 'pair':
      checkAgent(p, op, args.agent);
      if (binding.guest && args.guest !== undefined && args.guest !== null && args.guest !== '') checkAgent(p, op, args.guest);
      return withSender(p, op, args);
    case 'filter':
      return withAgent(p, op, withSender(p, op, args), 'agent');
    case 'agent_events':
      if (p.sender !== null) throw forbidden(`this token speaks only as sender ${quoted(p.sender)}: ${op} would show every sender's conversations`);
      return withAgent(p, op, args, binding.field);
    case 'agent':
      if (binding.required) return (checkAgent(p, op, args[binding.field]), args);
      return withAgent(p, op, args, binding.field);
    case 'run':
      // Always the token's own binding, whatever the client put there: the run's shard (here or on another node) holds the run to it.
      return { ...args, only_pair: { agents: p.agents === null ? null : [...p.agents], sender: p.sender } };
    case 'unbound':
      throw forbidden(`this token is bound to ${p.sender !== null ? `sender ${quoted(p.sender)}` : 'some agents'}: ${op} cannot be narrowed to what it may see, so it is refused`);
  }
}

/** The request's arguments as they may go on for `p`, or a 403. Admin and unbound tokens' arguments pass as they are. */
export function authorize(p: Principal, op: OperationName, args: Args): Args {
  checkScope(p, op);
  if (p.scopes.includes('admin') || (p.agents === null && p.sender === null)) return args;
  return bound(p, op, args, SCOPE_TABLE[op].binding);
}

/**
 * Dispatch that first holds each request to its requester's principal: none
 * (a Unix socket, a token-less TCP, a harness's capability call, a call
 * another node forwarded after its entry node checked it) is the admin.
 */
export function guardedDispatch(next: Dispatch): Dispatch {
  return (from, req, body) => {
    const p = from.principal;
    if (p === undefined || p.scopes.includes('admin')) return next(from, req, body);
    const keys = Object.keys(body);
    // Malformed requests and unknown operations: dispatch answers them (400), as for anyone.
    if (keys.length !== 1 || !Object.hasOwn(SCOPE_TABLE, keys[0]!) || !isPlainMap(body[keys[0]!])) return next(from, req, body);
    const op = keys[0] as OperationName;
    let args: Args;
    try {
      args = authorize(p, op, body[op] as Args);
    } catch (err) {
      const e = err as AgentdError;
      return from.reply(req, errorBody({ code: e.code, message: e.message }));
    }
    next(from, req, args === body[op] ? body : { [op]: args });
  };
}

