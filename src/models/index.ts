/** Resolves an agent's model to the provider that serves it, behind the agent's secret redaction. */
import type { AgentConfig, ProviderConfig } from '../shared/config.ts';
import type { Logger } from '../shared/log.ts';
import { apiKeyOf } from '../shared/provider-http.ts';
import { Redactor, secretValues } from '../shared/redact.ts';
import { EchoModel } from './echo.ts';
import { OpenAIModel } from './openai.ts';
import { RedactingModel } from './redacting.ts';
import type { Model } from './types.ts';

const echo = new EchoModel();

export class Models {
  #providers: Record<string, ProviderConfig>;
  readonly #clients = new Map<string, Model>();
  /** Per agent config (a changed config is a new object): its model behind its redactor. */
  #redacted = new WeakMap<AgentConfig, Model>();

  constructor(
    providers: Record<string, ProviderConfig>,
    readonly log: Logger | null = null,
  ) {
    this.#providers = providers;
  }

  /** `reload_config`: new providers for turns that start from now on (a running turn keeps the client it has). */
  setProviders(providers: Record<string, ProviderConfig>): void {
    this.#providers = providers;
    this.#clients.clear();
    this.#redacted = new WeakMap();
  }

  for(agent: AgentConfig): Model | Error {
    let model = this.#redacted.get(agent);
    if (model !== undefined) return model;
    const inner = this.#provider(agent);
    if (inner instanceof Error) return inner;
    // No secrets (echo, no providers, no MCP values): the model is used as it is, at no cost.
    const redactor = new Redactor(secretValues(Object.values(this.#providers), apiKeyOf, agent));
    model = redactor.active ? new RedactingModel(inner, redactor) : inner;
    this.#redacted.set(agent, model);
    return model;
  }

  #provider(agent: AgentConfig): Model | Error {
    if (agent.provider === null) {
      return agent.model === 'echo' ? echo : new Error(`model "${agent.model}" has no provider configured`);
    }
    let client = this.#clients.get(agent.provider);
    if (client === undefined) {
      const cfg = this.#providers[agent.provider];
      if (cfg === undefined) return new Error(`provider "${agent.provider}" is not configured`);
      client = new OpenAIModel(agent.provider, cfg, this.log);
      this.#clients.set(agent.provider, client);
    }
    return client;
  }
}
