/** Every agentctl command, in the order --help lists them. */
import type { Command } from '../command.ts';
import { agentCommands } from './agents.ts';
import { busCommands } from './bus.ts';
import { catalogCommands } from './catalog.ts';
import { completion } from './completion.ts';
import { conversationCommands } from './conversations.ts';
import { daemonCommands } from './daemon.ts';
import { mcpCommands } from './mcps.ts';
import { profileCommands } from './profile.ts';
import { turnCommands } from './turns.ts';
import { scheduleCommands } from './schedules.ts';
import { webhookCommands } from './webhooks.ts';
import { runCommands } from './runs.ts';
import { tokenCommands } from './tokens.ts';
import { transferCommands } from './transfer.ts';

export const COMMANDS: readonly Command[] = [...turnCommands, ...runCommands, ...conversationCommands, ...transferCommands, ...agentCommands, ...catalogCommands, ...mcpCommands, ...busCommands, ...scheduleCommands, ...webhookCommands, ...tokenCommands, ...daemonCommands, ...profileCommands, completion];

/** Groups whose bare name runs their `list` command. */
export const GROUPS: readonly string[] = ['agents', 'models', 'skills', 'profile', 'schedules', 'webhooks', 'tokens'];

/** Finds the command named by the first positionals; returns it and how many words its name took. */
export function findCommand(positionals: string[]): { command: Command; words: number } | null {
  const [first, second] = positionals;
  if (first === undefined) return null;
  const two = COMMANDS.find((c) => c.name === `${first} ${second}`);
  if (two !== undefined) return { command: two, words: 2 };
  const one = COMMANDS.find((c) => c.name === first);
  if (one !== undefined) return { command: one, words: 1 };
  if (GROUPS.includes(first) && second === undefined) return { command: COMMANDS.find((c) => c.name === `${first} list`)!, words: 1 };
  return null;
}
