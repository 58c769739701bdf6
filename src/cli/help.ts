/** agentctl's help texts: the overview and one page per command. */
import { COMMAND_OPTIONS, type Command } from './command.ts';
import { COMMANDS } from './commands/index.ts';
import { CONNECT_HELP } from './connect-flags.ts';
import { EXIT_TABLE } from './exit-codes.ts';

const SECTIONS: [string, (c: Command) => boolean][] = [
  ['turns', (c) => ['stream', 'send', 'kill', 'compact'].includes(c.name)],
  ['conversations', (c) => ['history', 'conversations', 'search', 'delete'].includes(c.name)],
  ['agents, models, skills', (c) => /^(agents|models|skills) /.test(c.name)],
  ['MCP servers', (c) => c.name === 'mcps' || c.name.startsWith('mcps ')],
  ['event bus', (c) => ['subscribe', 'unsubscribe', 'subscriptions', 'publish', 'events'].includes(c.name)],
  ['daemon', (c) => ['ping', 'stats', 'top', 'cluster'].includes(c.name)],
  ['this machine (no daemon needed)', (c) => c.local === true],
];

/** A command no section above claims (so a new one is never left out of --help). */
const unlisted = (c: Command): boolean => !SECTIONS.some(([, has]) => has(c));

export const COMMON_HELP = `every command takes:
  --json               print the daemon's reply as one JSON line, for scripts
                       (stream and events: one JSON line per event)
  -h, --help           the command's description, options and an example
                       (so does agentctl help COMMAND)
  -V, --version        print agentctl's version
with --json an error is one JSON line on stderr too:
  {"error": {"kind": "daemon", "exit": 1, "code": 404, "message": "error 404: ..."}}`;

export const EXIT_HELP = `exit codes:
${EXIT_TABLE.map(([code, text]) => `  ${String(code).padEnd(4)}${text}`).join('\n')}
Colour is used only on a terminal; NO_COLOR=1 turns it off.`;

const EXAMPLES = [
  'agentctl stream assistant "hello there"          # the answer as it arrives',
  'agentctl history assistant | head -20',
  'agentctl send assistant "status?" --json | jq -r .content',
  'agentctl --tcp db1:6688 --token "$AGENTD_TOKEN" stats',
  'agentctl profile add prod --tcp db1:6688 --token "$T" && agentctl --profile prod ping',
  'source <(agentctl completion bash)',
];

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
  for (const [title, has] of [...SECTIONS, ['other', unlisted] as const]) {
    const listed = COMMANDS.filter(has);
    if (listed.length === 0) continue;
    lines.push(`${title}:`);
    for (const c of listed) lines.push(`  ${`${c.name} ${c.usage}`.trim().padEnd(width)}${c.summary}`);
    lines.push('');
  }
  lines.push(COMMON_HELP, '', CONNECT_HELP, '', GUEST_HELP, '', EXIT_HELP, '',
    'examples:', ...EXAMPLES.map((e) => `  ${e}`), '', 'docs/agentctl.md in the package is the full reference.');
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
