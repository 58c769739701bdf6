/** The wire contract of agents (PROTOCOL §4.6), models (§4.7) and skills (§4.8). */
import type { AgentConfig, HarnessConfig, McpConfig } from '../config.ts';
import type { Empty } from './common.ts';

// The agent configuration is defined once, where it is validated (src/shared/config.ts).
export type { AgentConfig, HarnessConfig, McpConfig };
/** One MCP server's settings, as `mcps` and `upsert_mcp` take them. */
export type McpServerConfig = McpConfig;

/** What `create_agent` takes: any subset of the configuration. */
export type AgentConfigInput = Partial<AgentConfig>;

/** What `update_agent` takes: a JSON merge patch (null removes a key). */
export type AgentConfigPatch = { [K in keyof AgentConfig]?: AgentConfig[K] | null | Record<string, unknown> };

export interface AgentInfo {
  name: string;
  description: string;
  model: string;
  max_iterations: number;
  thinking: boolean;
  skills: string[];
  mcps: string[];
  /** Empty wherever a harness receives it (PROTOCOL §5). */
  config: AgentConfig | Empty;
}

export interface NameArgs {
  name: string;
}
export interface ModelInfo {
  name: string;
  active: boolean;
}

export interface SkillInfo {
  name: string;
  description: string;
}

export interface SkillBody {
  name: string;
  body: string;
}

export interface AgentOperations {
  list_agents: { args: Empty; variant: 'agent_list'; reply: { agents: AgentInfo[] } };
  get_agent: { args: NameArgs; variant: 'agent_info'; reply: AgentInfo };
  create_agent: { args: { name: string; config: AgentConfigInput }; variant: 'agent_info'; reply: AgentInfo };
  update_agent: { args: { name: string; config: AgentConfigPatch }; variant: 'agent_info'; reply: AgentInfo };
  delete_agent: { args: NameArgs; variant: 'pong'; reply: Empty };
  rename_agent: { args: { name: string; new_name: string }; variant: 'agent_info'; reply: AgentInfo };
  list_models: { args: Empty; variant: 'model_list'; reply: { models: ModelInfo[] } };
  set_active_model: { args: { model: string }; variant: 'pong'; reply: Empty };
  list_skills: { args: Empty; variant: 'skill_list'; reply: { skills: SkillInfo[] } };
  get_skill: { args: NameArgs; variant: 'skill_body'; reply: SkillBody };
}
