/**
 * Every message cluster nodes send each other over NATS: one schema (the
 * table below), one encoding (portable msgpack, as on the client wire), and
 * one check on receipt that names what is wrong. Each message is a map whose
 * `t` names its kind; a kind's fields are all required.
 *
 * Forwarding (router.ts, forward.ts): a client's `request` travels as a `call` (the request, its first piece), `accept` /
 * `refuse` (the owner's answer), `frame` pieces and `end` to the entry node's
 * inbox, `ack`, `cancel` and further `body` pieces to the owner's control
 * subject. Sharing (sync.ts): `agent`, `subs`, `purge`, `fire` and their
 * `answer`, `watch`, `watch_ask`, `events`.
 */
import { isPlainMap } from '../shared/args.ts';
import { packr, unpackr } from '../shared/codec.ts';

/** What a field holds, checked on receipt. */
const FIELD_CHECKS = {
  count: (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0,
  number: (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v),
  text: (v: unknown): v is string => typeof v === 'string',
  flag: (v: unknown): v is boolean => typeof v === 'boolean',
  bytes: (v: unknown): v is Uint8Array => v instanceof Uint8Array,
  texts: (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string'),
  byteList: (v: unknown): v is Uint8Array[] => Array.isArray(v) && v.every((x) => x instanceof Uint8Array),
  map: (v: unknown): v is Record<string, unknown> => isPlainMap(v),
  /** A text, or nil for none. */
  maybeText: (v: unknown): v is string | null => v === null || typeof v === 'string',
} as const;
type Field = keyof typeof FIELD_CHECKS;
type FieldValue<F extends Field> = (typeof FIELD_CHECKS)[F] extends (v: unknown) => v is infer T ? T : never;

const FIELD_NAMES: Record<Field, string> = {
  count: 'a whole number from 0', number: 'a number', text: 'a string', flag: 'a boolean', bytes: 'binary',
  texts: 'an array of strings', byteList: 'an array of binaries', map: 'a map', maybeText: 'a string or nil',
};

/** One piece of a message cut by chunks.ts: its place in the message (from 0) and whether it is the last. */
const PIECE = { part: 'count', last: 'flag', bytes: 'bytes' } as const;

const SCHEMA = {
  /** A client's request as a forwarded call carries it: its id at the entry node (the owner answers under it), and its body. */
  request: { req: 'count', body: 'map' },
  call: { window: 'count', inbox: 'text', node: 'text', ...PIECE },
  accept: { node: 'text', control: 'text' },
  refuse: { reason: 'text' },
  frame: { seq: 'count', ...PIECE },
  end: { seq: 'count' },
  ack: { seq: 'count' },
  cancel: {},
  body: PIECE,
  agent: { from: 'text', agent: 'text' },
  subs: { from: 'text' },
  purge: { agent: 'text' },
  fire: { id: 'text', partition: 'count', agent: 'text', source: 'text', payload: 'text', depth: 'count', budget: 'number', turn_id: 'maybeText' },
  /** A purge's or a fire's answer: null when it was done, else why not. */
  answer: { error: 'maybeText' },
  watch: { from: 'text', watching: 'flag' },
  watch_ask: {},
  events: { from: 'text', agents: 'texts', bodies: 'byteList' },
} as const satisfies Record<string, Record<string, Field>>;

export type Kind = keyof typeof SCHEMA;
export type Message<K extends Kind = Kind> = K extends Kind ? { t: K } & { -readonly [F in keyof (typeof SCHEMA)[K]]: FieldValue<(typeof SCHEMA)[K][F] & Field> } : never;

export function encodeMessage(message: Message): Uint8Array {
  return packr.pack(message);
}

/** Reads a message of one of `kinds`; anything else throws an error that says what is wrong. */
export function decodeMessage<K extends Kind>(data: Uint8Array, ...kinds: K[]): Message<K> {
  let value: unknown;
  try {
    value = unpackr.unpack(data);
  } catch (err) {
    throw new Error(`a cluster message of ${data.length} bytes is not msgpack: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('a cluster message must be a map');
  const m = value as Record<string, unknown>;
  if (!(kinds as string[]).includes(m.t as string)) throw new Error(`a cluster message of kind ${JSON.stringify(m.t)} where ${kinds.join(' or ')} was expected`);
  const fields = SCHEMA[m.t as K] as Record<string, Field>;
  for (const [name, field] of Object.entries(fields)) {
    if (!FIELD_CHECKS[field](m[name])) throw new Error(`a cluster "${String(m.t)}" message whose "${name}" is not ${FIELD_NAMES[field]}`);
  }
  return m as Message<K>;
}
