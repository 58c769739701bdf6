/** agentctl's help texts: the overview and one page per command. */
import { COMMAND_OPTIONS, type Command } from './command.ts';
import { COMMANDS } from './commands/index.ts';
import { CONNECT_HELP } from './connect-flags.ts';

const SECTIONS: [string, (c: Command) => boolean][] = [
  ['turns', (c) => ['stream', 'send', 'kill', 'compact'].includes(c.name)],
  ['conversations', (c) => ['history', 'conversations', 'search', 'delete'].includes(c.name)],
  ['agents, models, skills', (c) => /^(agents|models|skills) /.test(c.name)],
  ['MCP servers', (c) => c.name === 'mcps' || c.name.startsWith('mcps ')],
  ['event bus', (c) => ['subscribe', 'unsubscribe', 'subscriptions', 'publish', 'events'].includes(c.name)],
  ['daemon', (c) => ['ping', 'stats'].includes(c.name)],
];

export const COMMON_HELP = `every command takes:
  --json               print the daemon's reply as one JSON line, for scripts
                       (stream and events: one JSON line per event)
  -h, --help           the command's description, options and an example`;

export const EXIT_HELP = `exit codes: 0 ok; 1 the daemon answered with an error (its code is printed, e.g.
"error 404: ...") or the turn failed or was cancelled; 2 usage error; 3 cannot connect to the daemon.
Colour is used only on a terminal; NO_COLOR=1 turns it off.`;

const GUEST_HELP = `--guest AGENT (stream): another registered agent answers this one turn inside the
conversation: it sees the conversation's history, runs without tools, and its reply is stored
attributed to it (history shows "AGENT (guest)"); the conversation stays the first agent's.`;

function usageLine(c: Command): string {
  const opts = (c.options ?? []).map((o) => `[${COMMAND_OPTIONS[o].help.split(/\s{2,}/)[0]}]`);
  return ['agentctl', c.name, c.usage, ...opts, '[--json]'].filter((s) => s !== '').join(' ');
}

export function overview(): string {
  const width = Math.max(...COMMANDS.map((c) => `${c.name} ${c.usage}`.length)) + 2;
  const lines = ['agentctl: talk to a running agentd from the command line', '',
    'usage: agentctl COMMAND [ARGS] [OPTIONS]', '       agentctl COMMAND --help', ''];
  for (const [title, has] of SECTIONS) {
    lines.push(`${title}:`);
    for (const c of COMMANDS.filter(has)) lines.push(`  ${`${c.name} ${c.usage}`.trim().padEnd(width)}${c.summary}`);
    lines.push('');
  }
  lines.push(COMMON_HELP, '', CONNECT_HELP, '', GUEST_HELP, '', EXIT_HELP, '',
    'example:', '  agentctl stream assistant "hello there"', '  agentctl history assistant');
  return lines.join('\n');
}

export function commandHelp(c: Command): string {
  const lines = [`usage: ${usageLine(c)}`, '', c.summary];
  if (c.details !== undefined) lines.push('', c.details);
  if (c.options?.includes('guest')) lines.push('', GUEST_HELP);
  lines.push('', 'options:');
  for (const o of c.options ?? []) lines.push(`  ${COMMAND_OPTIONS[o].help}`);
  lines.push('  --json              print the reply as JSON, for scripts', '  (and the connection flags: see agentctl --help)');
  lines.push('', 'example:', `  ${c.example}`, '', EXIT_HELP);
  return lines.join('\n');
}
