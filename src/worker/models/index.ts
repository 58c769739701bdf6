/** Resolves an agent's `model` to a provider. Only `echo` is built in so far. */
import type { AgentConfig } from '../../shared/config.ts';
import { EchoModel } from './echo.ts';
import type { Model } from './types.ts';

const echo = new EchoModel();

export function modelFor(agent: AgentConfig): Model | Error {
  if (agent.model === 'echo') return echo;
  return new Error(`model "${agent.model}" has no provider configured`);
}
