/** The one builder of the turn message main sends a shard, for client turns and bus-fired ones alike. */
import type { OnBusy, ToolChoice } from '../shared/protocol.ts';
import { BUS_CONN, type TurnRequest } from '../shared/threads/shard-messages.ts';
import type { ContentBytes } from './net/request-body.ts';
import { sharedPayload } from './bus/shared-payload.ts';

/** What a turn must say; everything else takes the default of a plain stored turn. */
export interface TurnFields {
  conn: number;
  req: number;
  mode: TurnRequest['mode'];
  agent: string;
  sender: string;
  /** The text, or (a big client turn) its undecoded bytes. */
  content: string | ContentBytes;
  guest?: string | null;
  ephemeral?: boolean;
  correlationId?: number | null;
  onBusy?: OnBusy;
  toolChoice?: ToolChoice | null;
  depth?: number;
  turnId?: string | null;
  chain?: number;
  detach?: boolean;
}

export function turnRequest(f: TurnFields): TurnRequest {
  const msg: TurnRequest = {
    type: 'turn',
    conn: f.conn,
    req: f.req,
    mode: f.mode,
    agent: f.agent,
    sender: f.sender,
    content: typeof f.content === 'string' ? f.content : '',
    guest: f.guest ?? null,
    ephemeral: f.ephemeral ?? false,
    correlationId: f.correlationId ?? null,
    onBusy: f.onBusy ?? 'enqueue',
    toolChoice: f.toolChoice ?? null,
    depth: f.depth ?? 0,
    seq: 0, // the shard pool numbers it when it routes it
    turnId: f.turnId ?? null,
    chain: f.chain ?? 0,
    detach: f.detach ?? false,
  };
  if (typeof f.content !== 'string') msg.contentBytes = f.content.bytes;
  return msg;
}

/**
 * The turn a fired subscription runs: for the pair (target agent, `event:<source>`), answering no one; a big payload
 * travels as bytes shared by every fire of its publish. `turnId`, when the publish had a key (a schedule's tick), makes
 * a second fire of the same publish replay the first instead of running again.
 */
export function busTurn(agent: string, source: string, payload: string, depth: number, chain: number, turnId: string | null = null): TurnRequest {
  return turnRequest({ conn: BUS_CONN, req: 0, mode: 'event', agent, sender: `event:${source}`, content: sharedPayload(payload), depth, chain, turnId });
}

/** The turn id of subscription `sub`'s fire of a publish keyed `key` (at most 64 bytes: keys are short hashes). */
export function fireTurnId(key: string | null, sub: number): string | null {
  return key === null ? null : `${key}:${sub}`;
}
