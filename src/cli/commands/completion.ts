/** `agentctl completion bash|zsh`: prints the shell's completion script. */
import { type Command, type LocalContext, UsageError } from '../command.ts';
import { bashCompletion, zshCompletion } from '../completion.ts';

export const completion: Command = {
  name: 'completion',
  usage: 'bash|zsh',
  summary: 'print a script that completes agentctl\'s commands and flags in the shell',
  details: 'bash: add `source <(agentctl completion bash)` to ~/.bashrc.\nzsh: add `source <(agentctl completion zsh)` to ~/.zshrc (after compinit).',
  example: 'agentctl completion bash > ~/.local/share/bash-completion/completions/agentctl',
  local: true,
  arity: [1, 1],
  async run({ args, out, commands }: LocalContext) {
    const shell = args[0]!;
    if (shell === 'bash') out.write(bashCompletion(commands));
    else if (shell === 'zsh') out.write(zshCompletion(commands));
    else throw new UsageError(`completion takes bash or zsh, got "${shell}"`);
  },
};
