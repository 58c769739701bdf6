/**
 * The client's operator methods (PROTOCOL §4.9, §4.15): configuration
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
  /** Cluster mode: hands this node's partitions to the others; resolves once it serves none (then it can be stopped). */
  drainNode(): Promise<W.DrainReport>;
  /** Renames an agent, keeping its conversations, subscriptions and webhook filters; 409 while it has turns running. */
  renameAgent(name: string, newName: string): Promise<W.AgentInfo>;
  /** One page of stored conversations as export records; pass its `next` as `after` for the one after. */
  exportConversations(args?: W.ExportArgs): Promise<W.ExportPage>;
  /** Every export record matching the filter, page by page (`export_conversations` until `next` is null). */
  exportRecords(filter?: { agent?: string; sender?: string; pageSize?: number }): AsyncGenerator<W.ExportRecord>;
  /** Writes one batch of a pair's messages at positions `from`, …; positions already stored with the same message are skipped. */
  importMessages(args: W.ImportArgs): Promise<W.ImportReply>;
}

export const adminMethods: AdminMethods & ThisType<Caller> = {
  reloadConfig() {
    return this.call('reload_config', {});
  },
  drainNode() {
    return this.call('drain', {});
  },
  renameAgent(name, newName) {
    return this.call('rename_agent', { name, new_name: newName });
  },
  exportConversations(args = {}) {
    return this.call('export_conversations', args);
  },
  async *exportRecords(filter = {}) {
    const { pageSize, ...pair } = filter;
    let after: string | undefined;
    for (;;) {
      const page = await this.call('export_conversations', { ...pair, ...(after === undefined ? {} : { after }), ...(pageSize === undefined ? {} : { limit: pageSize }) });
      yield* page.records;
      if (page.next === null) return;
      after = page.next;
    }
  },
  importMessages(args) {
    return this.call('import_messages', args);
  },
};
