/**
 * An operation's arguments as its handler sees them: a view of the request's
 * argument map, bound to the operation, whose readers accept only the fields
 * the wire contract (shared/wire/ops.ts) declares for it, with the type it
 * declares. Each read validates its field and, when bad, throws the 400 that
 * names the operation and field (shared/args.ts), so a handler reads fields in
 * the order it wants its errors reported.
 */
import { AgentdError, Code } from '../../shared/errors.ts';
import { isPlainMap, nonEmptyStr, optBool, optEnum, optStr, optUint, refuse, str, type Args } from '../../shared/args.ts';
import { BUS_SENDER_PREFIX, MAX_NAME_BYTES, type ToolChoice } from '../../shared/protocol.ts';
import type { ArgsOf, OperationName } from '../../shared/wire/ops.ts';

/** The fields of `Op`'s arguments whose declared type is a `T` (none for operations that take the empty map). */
export type ArgField<Op extends OperationName, T> =
  string extends keyof ArgsOf<Op> ? never : { [K in keyof ArgsOf<Op>]-?: NonNullable<ArgsOf<Op>[K]> extends T ? K : never }[keyof ArgsOf<Op>] & string;

/** The agent registry, as far as argument checks need it. */
export interface AgentNames {
  has(name: string): boolean;
}

// Covariant: a view of one operation's arguments serves where any of several is taken, reading the fields they share.
export class OpArgs<Op extends OperationName> {
  readonly op: Op;
  readonly #args: Args;

  constructor(op: Op, args: Args) {
    this.op = op;
    this.#args = args;
  }

  /** A field as it came, for fields whose check is the handler's own (a payload of any type, a body left undecoded). */
  raw(field: keyof ArgsOf<Op> & string): unknown {
    return this.#args[field];
  }

  str(field: ArgField<Op, string>): string {
    return str(this.op, this.#args, field);
  }

  nonEmptyStr(field: ArgField<Op, string>): string {
    return nonEmptyStr(this.op, this.#args, field);
  }

  /** An optional string where empty means absent. */
  optStr(field: ArgField<Op, string>): string | null {
    return optStr(this.op, this.#args, field) || null;
  }

  optBool(field: ArgField<Op, boolean>): boolean | undefined {
    return optBool(this.op, this.#args, field);
  }

  optUint(field: ArgField<Op, number>): number | undefined {
    return optUint(this.op, this.#args, field);
  }

  uint(field: ArgField<Op, number>): number {
    const v = optUint(this.op, this.#args, field);
    if (v === undefined) throw new AgentdError(Code.BadRequest, `${this.op}.${field} is required`);
    return v;
  }

  optEnum<K extends ArgField<Op, string>>(field: K, allowed: readonly NonNullable<ArgsOf<Op>[K]>[]): NonNullable<ArgsOf<Op>[K]> | undefined {
    return optEnum(this.op, this.#args, field, allowed as readonly string[]) as NonNullable<ArgsOf<Op>[K]> | undefined;
  }

  /** Fields the protocol removed (so absent from the contract): refused, not ignored. */
  refuse(fields: readonly string[], why: string): void {
    refuse(this.op, this.#args, fields, why);
  }

  /** A map argument, checked further by whoever takes it; `what` says what it holds. */
  map(field: ArgField<Op, object>, what = 'a map'): Args {
    const v = this.#args[field];
    if (!isPlainMap(v)) throw new AgentdError(Code.BadRequest, `${this.op}.${field} must be ${what}`);
    return v;
  }

  toolChoice(field: ArgField<Op, ToolChoice>): ToolChoice | null {
    const v = this.#args[field];
    if (v === undefined || v === null) return null;
    if (typeof v === 'string' || isPlainMap(v)) return v;
    throw new AgentdError(Code.BadRequest, `${this.op}.${field} must be a string or a map`);
  }

  /** `sender`, or the daemon's default when absent or empty; a name by the rules of PROTOCOL §3. */
  sender(field: ArgField<Op, string>, defaultSender: string): string {
    const sender = this.optStr(field);
    return sender === null ? defaultSender : this.#name(field, sender);
  }

  /**
   * A sender a turn is written as: also not `event:…`, the bus's own
   * conversations, so no client can write into what fired turns see.
   */
  writingSender(field: ArgField<Op, string>, defaultSender: string): string {
    const sender = this.sender(field, defaultSender);
    if (sender.startsWith(BUS_SENDER_PREFIX)) {
      throw new AgentdError(Code.BadRequest, `${this.op}.${field} must not start with "${BUS_SENDER_PREFIX}": those conversations belong to the event bus`);
    }
    return sender;
  }

  /** A non-empty name (an event source, say) by the rules of PROTOCOL §3. */
  name(field: ArgField<Op, string>): string {
    return this.#name(field, this.nonEmptyStr(field));
  }

  /** An agent name that must name an existing agent (404 otherwise). */
  knownAgent(agents: AgentNames, field: ArgField<Op, string>): string {
    const name = this.name(field);
    if (!agents.has(name)) throw new AgentdError(Code.NotFound, `unknown agent "${name}"`);
    return name;
  }

  /** At most MAX_NAME_BYTES of UTF-8, and no U+FFFD: the mark msgpack decoding leaves where the bytes were not UTF-8. */
  #name(field: string, value: string): string {
    if (value.length > MAX_NAME_BYTES || Buffer.byteLength(value) > MAX_NAME_BYTES) {
      throw new AgentdError(Code.BadRequest, `${this.op}.${field} must be at most ${MAX_NAME_BYTES} bytes of UTF-8, got ${Buffer.byteLength(value)}`);
    }
    if (value.includes('\uFFFD')) throw new AgentdError(Code.BadRequest, `${this.op}.${field} must be valid UTF-8 (U+FFFD is refused: it marks bytes that were not)`);
    return value;
  }
}

/**
 * The view of one of several operations as their common view, for a helper
 * they share: it reads only the fields all of them declare. Sound, but not
 * something the compiler can prove through ArgField's conditional type.
 */
export function commonView<Ops extends OperationName>(args: Ops extends OperationName ? OpArgs<Ops> : never): OpArgs<Ops> {
  return args as OpArgs<Ops>;
}
