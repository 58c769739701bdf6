/**
 * Checks that every harness module an agent names is installed in
 * $AGENTD_HOME/harness before the agent is stored or the daemon starts, so a
 * bad module is refused with the field that names it, never discovered at a
 * first turn. Requests check without blocking; start-up may block.
 */
import { AgentdError, Code } from '../../shared/errors.ts';
import { type AgentConfig } from '../../shared/config.ts';
import { ConfigError } from '../../shared/config-checks.ts';
import { resolveHarnessModule, resolveHarnessModuleSync } from '../../shared/harness-module.ts';

/** For create_agent / update_agent: a 400 naming `op.config.harnesses[i].module` and why. */
export async function checkHarnessModules(home: string, config: AgentConfig, op: string): Promise<void> {
  for (const [i, h] of config.harnesses.entries()) {
    try {
      await resolveHarnessModule(home, h.module);
    } catch (err) {
      throw new AgentdError(Code.BadRequest, `${op}: config.harnesses[${i}].module: ${(err as Error).message}`);
    }
  }
}

/** For the config file's agents at start-up: a ConfigError stops the daemon with the field and the reason. */
export function checkHarnessModulesAtStart(home: string, agents: Record<string, AgentConfig>, source: string): void {
  for (const [name, config] of Object.entries(agents)) {
    for (const [i, h] of config.harnesses.entries()) {
      try {
        resolveHarnessModuleSync(home, h.module);
      } catch (err) {
        throw new ConfigError(source, `agents.${name}.harnesses[${i}].module`, (err as Error).message);
      }
    }
  }
}
