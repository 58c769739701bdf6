/**
 * Shell completion scripts, generated from the command table so they never
 * miss a command or flag. zsh runs the bash function through bashcompinit,
 * so both shells complete the same way.
 */
import { COMMAND_OPTIONS, type Command } from './command.ts';
import { CONNECT_FLAGS } from './connect-flags.ts';

/** Flags every command takes, besides its own. */
const GLOBAL_FLAGS = [...Object.keys(CONNECT_FLAGS), 'json', 'help', 'version'].map((f) => `--${f}`);

/** Flags followed by a value (the word after them is not a command). */
function valueFlags(): string[] {
  const connect = Object.keys(CONNECT_FLAGS);
  const own = Object.entries(COMMAND_OPTIONS).filter(([, o]) => o.type === 'string').map(([name]) => name);
  return [...connect, ...own].map((f) => `--${f}`);
}

const quote = (words: string[]): string => words.join(' ');

/** `case` arms: the second words of each group ("agents" -> "list show ..."). */
function subcommandArms(commands: readonly Command[]): string {
  const groups = new Map<string, string[]>();
  for (const c of commands) {
    const [group, sub] = c.name.split(' ');
    if (sub !== undefined) groups.set(group!, [...(groups.get(group!) ?? []), sub]);
  }
  return [...groups].map(([g, subs]) => `    ${g}) echo "${quote(subs)}" ;;`).join('\n');
}

/** `case` arms: each command's own flags, two-word names first so they win. */
function optionArms(commands: readonly Command[]): string {
  const sorted = [...commands].sort((a, b) => b.name.split(' ').length - a.name.split(' ').length);
  return sorted
    .filter((c) => (c.options ?? []).length > 0)
    .map((c) => `    "${c.name}" | "${c.name} "*) echo "${quote((c.options ?? []).map((o) => `--${o}`))}" ;;`)
    .join('\n');
}

export function bashCompletion(commands: readonly Command[]): string {
  const top = [...new Set(commands.map((c) => c.name.split(' ')[0]!)), 'help'];
  return `# agentctl completion for bash. Load it with
#   source <(agentctl completion bash)
# or save it as ~/.local/share/bash-completion/completions/agentctl
_agentctl_subcommands() {
  case "$1" in
${subcommandArms(commands)}
    help) echo "${quote(top)}" ;;
    completion) echo "bash zsh" ;;
  esac
}
_agentctl_options() {
  case "$1" in
${optionArms(commands)}
  esac
}
_agentctl() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD-1]}
  case "$prev" in
    --socket|--home|--command) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --profile) COMPREPLY=($(compgen -W "$(agentctl profile list 2>/dev/null | tail -n +2 | cut -d' ' -f1)" -- "$cur")); return ;;
    ${valueFlags().join('|')}) COMPREPLY=(); return ;;
  esac
  local -a words=()
  local i w skip=
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=\${COMP_WORDS[i]}
    if [[ -n $skip ]]; then skip=; continue; fi
    case "$w" in
      ${valueFlags().join('|')}) skip=1 ;;
      -*) ;;
      *) words+=("$w") ;;
    esac
  done
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(_agentctl_options "\${words[*]}") ${quote(GLOBAL_FLAGS)}" -- "$cur"))
  elif (( \${#words[@]} == 0 )); then
    COMPREPLY=($(compgen -W "${quote(top)}" -- "$cur"))
  elif (( \${#words[@]} == 1 )); then
    COMPREPLY=($(compgen -W "$(_agentctl_subcommands "\${words[0]}")" -- "$cur"))
  fi
}
complete -o default -F _agentctl agentctl
`;
}

export function zshCompletion(commands: readonly Command[]): string {
  return `#compdef agentctl
# agentctl completion for zsh (the bash completion through bashcompinit). Load it with
#   source <(agentctl completion zsh)
# after compinit in ~/.zshrc.
autoload -U +X compinit && { whence compdef >/dev/null || compinit; }
autoload -U +X bashcompinit && bashcompinit
${bashCompletion(commands).replace(/^# .*\n/gm, '')}`;
}
