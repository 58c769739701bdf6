/** Conversations and search: history, conversations, search, delete (PROTOCOL §4.3). */
import type { HistoryMessage, SessionHit } from '../../client/index.ts';
import { type Command, type Context, oneAgent, pairLabel, parseUint, senderOf } from '../command.ts';
import { clip, duration, type Output, type Style } from '../output.ts';

const pair = (agent: string, sender: string): string => `${agent}/${sender}`;

function speaker(m: HistoryMessage, agent: string): string {
  if (m.role === 'assistant') return m.agent !== undefined ? `${m.agent} (guest)` : agent;
  return m.role;
}

const history: Command = {
  name: 'history',
  usage: 'AGENT',
  summary: 'print a conversation as a transcript, oldest first',
  details: 'Tool outputs are shortened to one line; --json gives them whole.',
  example: 'agentctl history assistant --sender alice',
  options: ['sender'],
  arity: [1, 1],
  async run({ client, args, flags, json, out }: Context) {
    const h = await client.history(args[0]!, flags.sender);
    if (json) return out.json(h);
    const s = out.out;
    out.line(s.bold(`${pair(h.agent, h.sender)}: "${h.title}" (${h.messages.length} messages)`));
    const width = Math.max(...h.messages.map((m) => speaker(m, h.agent).length), 4);
    for (const m of h.messages) {
      const who = speaker(m, h.agent).padEnd(width);
      if (m.role === 'tool') out.line(s.dim(`${who}  ${clip(m.content)}`));
      else if (m.role === 'user') out.line(`${s.cyan(who)}  ${indent(m.content, width + 2)}`);
      else out.line(`${s.green(who)}  ${m.content === '' ? s.dim('(called tools)') : indent(m.content, width + 2)}`);
    }
  },
};

function indent(text: string, by: number): string {
  return text.replace(/\n/g, `\n${' '.repeat(by)}`);
}

const conversations: Command = {
  name: 'conversations',
  usage: '',
  summary: 'list stored conversations, most recently updated first',
  details: 'With --active: the conversations in memory now, whether a turn runs and how many wait.',
  example: 'agentctl conversations --agent assistant',
  options: ['agent', 'sender', 'active'],
  arity: [0, 0],
  async run({ client, flags, json, out }: Context) {
    const filter = { ...oneAgent(flags), ...senderOf(flags) };
    if (flags.active === true) {
      const r = await client.call('list_active_conversations', filter);
      if (json) return out.json(r);
      if (r.conversations.length === 0) return out.line('no conversations in memory');
      out.table([['CONVERSATION', 'MESSAGES', 'ALIVE', 'STATE', 'TITLE'], ...r.conversations.map((c) => [
        pair(c.agent, c.sender), String(c.message_count), duration(c.alive_secs),
        c.running ? `running${c.queued > 0 ? `, ${c.queued} queued` : ''}` : 'idle', clip(c.title, 60)])]);
      return;
    }
    const r = await client.call('list_conversations', filter);
    if (json) return out.json(r);
    if (r.conversations.length === 0) return out.line('no conversations');
    out.table([['CONVERSATION', 'MESSAGES', 'UPDATED', 'TITLE'], ...r.conversations.map((c) => [
      pair(c.agent, c.sender), String(c.message_count), shortTime(c.updated_at), clip(c.title, 60)])]);
  },
};

/** "2026-11-30 16:41:47" from an RFC 3339 UTC string. */
function shortTime(iso: string): string {
  return iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, '');
}

/** The query's words, as the daemon finds them (PROTOCOL §4.3): runs of letters, digits and `_`. */
function queryWords(query: string): string[] {
  return [...new Set(query.match(/[\p{L}\p{N}_]+/gu) ?? [])];
}

export function markHits(snippet: string, words: string[], style: Style): string {
  if (words.length === 0) return snippet;
  const escaped = words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  const re = new RegExp(`(?<![\\p{L}\\p{N}_])(?:${escaped.join('|')})(?![\\p{L}\\p{N}_])`, 'giu');
  return snippet.replace(re, (m) => style.mark(m));
}

function printHit(out: Output, hit: SessionHit, n: number, words: string[]): void {
  const s = out.out;
  out.line(`${s.bold(`${n}. ${pair(hit.agent, hit.sender)}`)}  "${clip(hit.title, 60)}"  ${s.dim(`updated ${shortTime(hit.updated_at)}`)}`);
  for (const m of hit.window) {
    const lead = m.msg_idx === hit.msg_idx ? '>' : ' ';
    const text = m.role === 'tool' ? s.dim(`(output of ${m.tool_name})`) : markHits(m.snippet.replace(/\s+/g, ' '), words, s);
    const tools = m.role === 'assistant' && m.tool_name !== '' ? s.dim(` (called ${m.tool_name})`) : '';
    out.line(`  ${lead} #${m.msg_idx} ${m.role.padEnd(9)} ${text}${m.truncated ? '…' : ''}${tools}`);
  }
}

const search: Command = {
  name: 'search',
  usage: 'WORDS...',
  summary: 'search stored conversations by words; one hit per conversation, best first',
  details: 'Words are matched case-insensitively and ORed; the matches are marked in the snippets\n(reverse video on a terminal, **like this** otherwise). The best-matching message is marked ">".',
  example: 'agentctl search deploy friday --limit 3 --context 2',
  options: ['agent', 'sender', 'limit', 'context'],
  arity: [1, Infinity],
  async run({ client, args, flags, json, out }: Context) {
    const query = args.join(' ');
    const context = flags.context !== undefined ? parseUint(flags.context, '--context') : 1;
    const r = await client.call('search_sessions', {
      query,
      context_before: context,
      context_after: context,
      ...(flags.limit !== undefined ? { limit: parseUint(flags.limit, '--limit') } : {}),
      ...oneAgent(flags),
      ...senderOf(flags),
    });
    if (json) return out.json(r);
    if (r.hits.length === 0) return out.line(`no conversation mentions ${JSON.stringify(query)}`);
    const words = queryWords(query);
    r.hits.forEach((hit, i) => printHit(out, hit, i + 1, words));
  },
};

const del: Command = {
  name: 'delete',
  usage: 'AGENT',
  summary: 'delete a conversation: its turns are cancelled, its messages and search entries removed',
  example: 'agentctl delete assistant --sender alice',
  options: ['sender'],
  arity: [1, 1],
  async run({ client, args, flags, json, out }: Context) {
    const r = await client.call('delete_conversation', { agent: args[0]!, ...senderOf(flags) });
    if (json) out.json(r);
    else out.line(`deleted the conversation ${pairLabel(args[0]!, flags.sender)}`);
  },
};

export const conversationCommands: Command[] = [history, conversations, search, del];
