/**
 * Conversation export and import (PROTOCOL §4.15): `export_conversations`
 * pages through the store on the storage pool; `import_messages` checks a
 * batch field by field here, then goes to the pair's shard, which writes it
 * in the pair's order (shard/import-batch.ts).
 */
import { AgentdError, Code } from '../../shared/errors.ts';
import { isPlainMap } from '../../shared/args.ts';
import type { Message } from '../../models/types.ts';
import type { ExportPage } from '../../shared/wire/transfer.ts';
import { EXPORT_PAGE, parseCursor } from '../../storage/export-page.ts';
import { op, ROUTED, type OpTable } from './op-table.ts';

/** Messages one `import_messages` may carry. */
export const MAX_IMPORT_BATCH = 1000;

const ROLES = new Set(['user', 'assistant', 'tool']);
const OPTIONAL_TEXT = ['agent', 'tool_call_id', 'name', 'stop_reason'] as const;
const MESSAGE_KEYS = new Set(['role', 'content', 'tool_calls', 'is_error', ...OPTIONAL_TEXT]);

function bad(field: string, what: string): AgentdError {
  return new AgentdError(Code.BadRequest, `import_messages.${field} ${what}`);
}

function toolCalls(v: unknown, field: string): Message['tool_calls'] {
  const ok = Array.isArray(v) && v.every((c) => isPlainMap(c) && typeof c.id === 'string' && typeof c.name === 'string' && typeof c.arguments === 'string');
  if (!ok) throw bad(field, 'must be a list of {id, name, arguments} maps of strings');
  return (v as { id: string; name: string; arguments: string }[]).map(({ id, name, arguments: a }) => ({ id, name, arguments: a }));
}

/** One message of the batch, as the store holds it; a 400 names the field that is wrong. */
function message(v: unknown, i: number): Message {
  const at = `messages[${i}]`;
  if (!isPlainMap(v)) throw bad(at, 'must be a map');
  for (const k of Object.keys(v)) if (!MESSAGE_KEYS.has(k)) throw bad(`${at}.${k}`, `is not a message field (known: ${[...MESSAGE_KEYS].join(', ')})`);
  if (typeof v.role !== 'string' || !ROLES.has(v.role)) throw bad(`${at}.role`, 'must be "user", "assistant" or "tool"');
  if (typeof v.content !== 'string') throw bad(`${at}.content`, 'must be a string');
  if (v.content.includes('\u0000')) throw bad(`${at}.content`, 'must not hold NUL characters');
  const m: Message = { role: v.role as Message['role'], content: v.content };
  for (const k of OPTIONAL_TEXT) {
    if (v[k] === undefined || v[k] === null) continue;
    if (typeof v[k] !== 'string') throw bad(`${at}.${k}`, 'must be a string');
    m[k] = v[k];
  }
  if (v.tool_calls !== undefined && v.tool_calls !== null) m.tool_calls = toolCalls(v.tool_calls, `${at}.tool_calls`);
  if (v.is_error !== undefined && v.is_error !== null && typeof v.is_error !== 'boolean') throw bad(`${at}.is_error`, 'must be true or false');
  if (v.is_error === true) m.is_error = true;
  return m;
}

export const transferOps: OpTable<'export_conversations' | 'import_messages'> = {
  export_conversations: op((ctx, _from, _req, args) => {
    const cursor = parseCursor(args.optStr('after'));
    if (cursor === null) throw new AgentdError(Code.BadRequest, 'export_conversations.after must be the `next` of an earlier page');
    const limit = Math.min(EXPORT_PAGE.maxLimit, Math.max(1, args.optUint('limit') ?? EXPORT_PAGE.defaultLimit));
    if (ctx.storage === null) return { records: [], next: null };
    return ctx.storage.run<ExportPage>({ op: 'export_page', filter: { agent: args.optStr('agent'), sender: args.optStr('sender') }, cursor, limit });
  }),
  import_messages: op((ctx, from, req, args) => {
    const agent = args.knownAgent(ctx.agents, 'agent');
    const sender = args.sender('sender', ctx.defaultSender);
    const start = args.uint('from');
    const raw = args.raw('messages');
    if (!Array.isArray(raw) || raw.length > MAX_IMPORT_BATCH) throw bad('messages', `must be a list of at most ${MAX_IMPORT_BATCH} messages`);
    const messages = raw.map(message);
    const summary = args.optStr('summary');
    const summaryUpto = args.optUint('summary_upto') ?? 0;
    if (summary !== null && (summaryUpto < 1 || summaryUpto > start + messages.length)) {
      throw bad('summary_upto', `must be between 1 and the position after this batch's last message (${start + messages.length}) when summary is given`);
    }
    ctx.pool.requestFor({ type: 'import', conn: from.id, req, agent, sender, from: start, messages, title: args.optStr('title'), summary, summaryUpto }, 'rr');
    return ROUTED;
  }),
};
