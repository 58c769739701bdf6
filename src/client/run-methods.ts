/**
 * The client's run methods that need nothing but a request (PROTOCOL §4.13);
 * client.ts adds them to AgentdClient's prototype. `joinRun` reads a stream,
 * so it stays in the class.
 */
import type * as W from '../shared/wire/ops.ts';
import type { ArgsOf, OperationName, ReplyOf } from '../shared/wire/ops.ts';
import type { Body } from './connection.ts';

/** What these methods use of the client. */
interface Caller {
  call<Op extends OperationName>(op: Op, args: ArgsOf<Op>): Promise<ReplyOf<Op>>;
  request(op: string, args?: Body): Promise<Body>;
}

export interface RunMethods {
  /** Adds a user message to the pair's running turn at its next boundary; resolves with the run's id (409 when none runs). */
  steer(agent: string, content: string, sender?: string): Promise<string>;
  /** Lets a waiting tool call run (`approve`), or denies it: the model then gets an error result carrying `reason`. */
  approveTool(runId: string, callId: string, approve: boolean, reason?: string): Promise<void>;
  getRun(runId: string): Promise<W.RunInfo>;
  /** Runs newest first. */
  listRuns(filter?: W.ListRunsArgs): Promise<W.RunInfo[]>;
}

export const runMethods: RunMethods & ThisType<Caller> = {
  async steer(agent, content, sender) {
    return (await this.call('steer', sender === undefined ? { agent, content } : { agent, content, sender })).run_id;
  },
  async approveTool(runId, callId, approve, reason) {
    await this.call('approve_tool', { run_id: runId, call_id: callId, approve, ...(reason === undefined ? {} : { reason }) });
  },
  getRun(runId) {
    return this.call('get_run', { run_id: runId });
  },
  // A list reply, so read here, not through call().
  async listRuns(filter = {}) {
    return (await this.request('list_runs', filter as Body)).runs as W.RunInfo[];
  },
};
