/**
 * The client's operator methods (PROTOCOL §4.9, §4.14): configuration
 * reload, agent rename, cluster drain, conversation export and import, kept
 * beside the class (client.ts adds them to AgentdClient's prototype).
 */
import type * as W from '../shared/wire/ops.ts';
import type { ArgsOf, OperationName, ReplyOf } from '../shared/wire/ops.ts';

/** What these methods use of the client. */
interface Caller {
  call<Op extends OperationName>(op: Op, args: ArgsOf<Op>): Promise<ReplyOf<Op>>;
}

export interface AdminMethods {
  /** Reads agentd.json again and applies what can change live; says what was applied and what needs a restart. */
  reloadConfig(): Promise<W.ReloadReport>;
}

export const adminMethods: AdminMethods & ThisType<Caller> = {
  reloadConfig() {
    return this.call('reload_config', {});
  },
};
