/** Resolves an agent's model to the provider that serves it. */
import type { AgentConfig, ProviderConfig } from '../../shared/config.ts';
import { EchoModel } from './echo.ts';
import { OpenAIModel } from './openai.ts';
import type { Model } from './types.ts';

const echo = new EchoModel();

export class Models {
  readonly #providers: Record<string, ProviderConfig>;
  readonly #clients = new Map<string, Model>();

  constructor(providers: Record<string, ProviderConfig>) {
    this.#providers = providers;
  }

  for(agent: AgentConfig): Model | Error {
    if (agent.provider === null) {
      return agent.model === 'echo' ? echo : new Error(`model "${agent.model}" has no provider configured`);
    }
    let client = this.#clients.get(agent.provider);
    if (client === undefined) {
      const cfg = this.#providers[agent.provider];
      if (cfg === undefined) return new Error(`provider "${agent.provider}" is not configured`);
      client = new OpenAIModel(agent.provider, cfg);
      this.#clients.set(agent.provider, client);
    }
    return client;
  }
}
