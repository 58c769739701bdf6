/**
 * A2A (JSON-RPC, protocol 1.0 and 0.3 on the same endpoint: a2a-v1.ts) on the HTTP door: docs/http-ecosystem.md.
 * Each agent has a card (`GET /a2a/{agent}/.well-known/agent-card.json`) and
 * a JSON-RPC endpoint (`POST /a2a/{agent}`); `GET /.well-known/agent-card.json`
 * is the daemon's directory card, one skill per agent, whose endpoint
 * `POST /a2a` takes the agent from the message's `metadata.agent`. A message
 * is one turn of the pair (agent, contextId); the task it makes is the run:
 * the task id is the run id, so `tasks/get` is `get_run`.
 */
import type { ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { AgentdError, Code, toWireError } from '../../../shared/errors.ts';
import { sendJson } from '../http-io.ts';
import type { HttpExchange, HttpRoute } from '../router.ts';
import { DataStream } from './openai-shared.ts';
import { agentCard, baseUrl, interfacesOf, RpcError, RpcFailure, type A2AMessage, type Task, type TaskState, type TextPart } from './a2a-types.ts';
import { agentNames, turnEvents, type TurnEnd } from './turn.ts';
import { resultV1, taskV1, V1_METHODS, V1_UNSUPPORTED, v1SendParams } from './a2a-v1.ts';

const now = (): string => new Date().toISOString();

function agentMessage(text: string, contextId: string, taskId: string): A2AMessage {
  return { kind: 'message', messageId: randomUUID(), role: 'agent', parts: [{ kind: 'text', text }], contextId, taskId };
}

/** The run's status as a task state (PROTOCOL §4.13). */
function stateOfRun(status: string): TaskState {
  const states: Record<string, TaskState> = { queued: 'submitted', running: 'working', waiting: 'input-required', done: 'completed', failed: 'failed', stalled: 'failed', cancelled: 'canceled' };
  return states[status] ?? 'unknown';
}

function stateOfEnd(end: TurnEnd): TaskState {
  if (end.stop_reason === 'cancelled') return 'canceled';
  return end.error === '' ? 'completed' : 'failed';
}

interface SendParams {
  message: A2AMessage;
  content: string;
  agent: string;
  /** The contextId the client gave (the sender), or null: the default sender. */
  sender: string | null;
}

function sendParams(params: unknown, pathAgent: string | null): SendParams {
  const p = params as { message?: unknown; metadata?: Record<string, unknown> } | null;
  const m = p?.message as A2AMessage | undefined;
  if (m === undefined || m === null || typeof m !== 'object' || !Array.isArray(m.parts)) throw new RpcFailure(RpcError.InvalidParams, 'params.message is required, with parts');
  const texts = m.parts.filter((part): part is TextPart => (part as { kind?: unknown }).kind === 'text' && typeof (part as TextPart).text === 'string');
  if (texts.length === 0) throw new RpcFailure(RpcError.InvalidParams, 'params.message has no text part: only text parts are supported');
  const agent = pathAgent ?? m.metadata?.agent ?? p?.metadata?.agent;
  if (typeof agent !== 'string' || agent === '') throw new RpcFailure(RpcError.InvalidParams, 'name the agent: POST /a2a/{agent}, or metadata.agent on the message');
  const sender = typeof m.contextId === 'string' && m.contextId !== '' ? m.contextId : null;
  return { message: m, content: texts.map((t) => t.text).join('\n'), agent, sender };
}

/** The sender a run has (its contextId when the client named none). */
async function senderOfRun(x: HttpExchange, runId: string): Promise<string> {
  const run = (await x.call('get_run', { run_id: runId })) as { sender: string };
  return run.sender;
}

/** A daemon error as the JSON-RPC error it is. */
function rpcOf(err: unknown): RpcFailure {
  if (err instanceof RpcFailure) return err;
  const { code, message } = toWireError(err);
  return new RpcFailure(code === Code.BadRequest || code === Code.NotFound ? RpcError.InvalidParams : RpcError.Internal, message);
}

/** `message/send`: the turn to its end, answered as a finished task (the reply as its artifact and status message). */
async function messageSend(x: HttpExchange, s: SendParams): Promise<Task> {
  let runId = '';
  let contextId = s.sender ?? '';
  let text = '';
  for await (const ev of turnEvents(x.requester(), { agent: s.agent, sender: s.sender, content: s.content })) {
    if (ev.kind === 'start') {
      runId = ev.runId;
      if (s.sender === null) contextId = await senderOfRun(x, runId);
    } else if (ev.kind === 'delta') text += ev.text;
    else {
      const state = stateOfEnd(ev.end);
      const reply = agentMessage(state === 'completed' ? text : ev.end.error, contextId, runId);
      return {
        kind: 'task', id: runId, contextId,
        status: { state, message: reply, timestamp: now() },
        artifacts: state === 'completed' ? [{ artifactId: `${runId}-reply`, name: 'reply', parts: [{ kind: 'text', text }] }] : [],
        history: [{ ...s.message, contextId, taskId: runId }, reply],
        metadata: { agent: s.agent, run_id: runId, usage: ev.end.usage },
      };
    }
  }
  throw new AgentdError(Code.Cancelled, 'the turn was cut before its end');
}

/** `message/stream`: the task (submitted), working, one artifact chunk per text delta, then the final status. */
async function messageStream(res: ServerResponse, x: HttpExchange, id: unknown, s: SendParams, shape: (r: unknown) => unknown): Promise<void> {
  const sse = new DataStream(res);
  const send = (result: unknown): void => sse.send({ jsonrpc: '2.0', id, result: shape(result) });
  let runId = '';
  let contextId = s.sender ?? '';
  let chunks = 0;
  const artifactId = (): string => `${runId}-reply`;
  try {
    for await (const ev of turnEvents(x.requester(), { agent: s.agent, sender: s.sender, content: s.content })) {
      if (ev.kind === 'start') {
        runId = ev.runId;
        if (s.sender === null) contextId = await senderOfRun(x, runId);
        sse.open();
        send({ kind: 'task', id: runId, contextId, status: { state: 'submitted', timestamp: now() }, history: [{ ...s.message, contextId, taskId: runId }], metadata: { agent: s.agent, run_id: runId } });
        send({ kind: 'status-update', taskId: runId, contextId, status: { state: 'working', timestamp: now() }, final: false });
      } else if (ev.kind === 'delta') {
        if (ev.text === '') continue;
        send({ kind: 'artifact-update', taskId: runId, contextId, artifact: { artifactId: artifactId(), name: 'reply', parts: [{ kind: 'text', text: ev.text }] }, append: chunks++ > 0, lastChunk: false });
      } else {
        const state = stateOfEnd(ev.end);
        const message = state === 'completed' ? undefined : agentMessage(ev.end.error, contextId, runId);
        send({ kind: 'status-update', taskId: runId, contextId, status: { state, timestamp: now(), ...(message === undefined ? {} : { message }) }, final: true });
      }
    }
  } catch (err) {
    const e = rpcOf(err);
    if (!res.headersSent) return sendJson(res, 200, { jsonrpc: '2.0', id, error: { code: e.code, message: e.message } });
    sse.send({ jsonrpc: '2.0', id, error: { code: e.code, message: e.message } });
  }
  sse.end();
}

/** `tasks/get`: the run, as a task (its state; the reply itself is in the conversation's history). */
async function tasksGet(x: HttpExchange, params: unknown, pathAgent: string | null): Promise<Task> {
  const taskId = (params as { id?: unknown } | null)?.id;
  if (typeof taskId !== 'string' || taskId === '') throw new RpcFailure(RpcError.InvalidParams, 'params.id is required: the task id');
  let run: { run_id: string; agent: string; sender: string; status: string; created_at: string; ended_at?: string; error?: string };
  try {
    run = (await x.call('get_run', { run_id: taskId })) as typeof run;
  } catch (err) {
    const { code, message } = toWireError(err);
    if (code === Code.NotFound || code === Code.BadRequest) throw new RpcFailure(RpcError.TaskNotFound, `task not found: ${message}`);
    throw err;
  }
  if (pathAgent !== null && run.agent !== pathAgent) throw new RpcFailure(RpcError.TaskNotFound, `task not found: run "${taskId}" is not ${pathAgent}'s`);
  const state = stateOfRun(run.status);
  const message = run.error !== undefined && run.error !== '' ? agentMessage(run.error, run.sender, run.run_id) : undefined;
  return {
    kind: 'task', id: run.run_id, contextId: run.sender,
    status: { state, timestamp: run.ended_at ?? run.created_at, ...(message === undefined ? {} : { message }) },
    metadata: { agent: run.agent, run_id: run.run_id, status: run.status },
  };
}

/** The request's method as 0.3 names it, with the shapes its params come in and its result goes out in (1.0's or 0.3's). */
function methodOf(method: string): { method: string; params: (p: unknown) => unknown; result: (r: unknown) => unknown; send: (r: unknown) => unknown } {
  const v03 = V1_METHODS[method];
  if (v03 === undefined) return { method, params: (p) => p, result: (r) => r, send: (r) => r };
  return { method: v03, params: v03 === 'tasks/get' ? (p) => p : v1SendParams, result: (r) => taskV1(r as Task), send: resultV1 };
}

async function rpc(res: ServerResponse, x: HttpExchange, pathAgent: string | null): Promise<void> {
  let id: unknown = null;
  try {
    const body = await x.readJson().catch((err: unknown) => {
      throw new RpcFailure(RpcError.Parse, (err as Error).message);
    });
    id = body.id ?? null;
    if (body.jsonrpc !== '2.0' || typeof body.method !== 'string') throw new RpcFailure(RpcError.InvalidRequest, 'a JSON-RPC 2.0 request with a method is required');
    const m = methodOf(body.method);
    if (m.method === 'message/stream') return await messageStream(res, x, id, sendParams(m.params(body.params), pathAgent), m.send);
    let result: unknown;
    if (m.method === 'message/send') result = m.send(await messageSend(x, sendParams(m.params(body.params), pathAgent)));
    else if (m.method === 'tasks/get') result = m.result(await tasksGet(x, body.params, pathAgent));
    else if (m.method.startsWith('tasks/') || m.method === 'agent/getAuthenticatedExtendedCard' || V1_UNSUPPORTED.has(m.method)) throw new RpcFailure(RpcError.UnsupportedOperation, `${m.method} is not supported by agentd`);
    else throw new RpcFailure(RpcError.MethodNotFound, `no method ${m.method}: SendMessage, SendStreamingMessage and GetTask (A2A 1.0), message/send, message/stream and tasks/get (0.3) are served`);
    sendJson(res, 200, { jsonrpc: '2.0', id, result });
  } catch (err) {
    const e = rpcOf(err);
    sendJson(res, 200, { jsonrpc: '2.0', id, error: { code: e.code, message: e.message } });
  }
}

async function knownAgent(x: HttpExchange, name: string): Promise<{ name: string; description: string }> {
  const found = (await agentNames((op, args) => x.call(op, args))).find((a) => a.name === name);
  if (found === undefined) throw new AgentdError(Code.NotFound, `unknown agent "${name}"`);
  return found;
}

/** The A2A routes: cards and JSON-RPC endpoints. */
export function a2aRoutes(): HttpRoute[] {
  const tag = 'a2a';
  return [
    {
      method: 'GET', path: '/a2a/{agent}/.well-known/agent-card.json', tag, summary: 'An agent\'s A2A card (protocol 0.3)',
      handler: async (req, res, x) => sendJson(res, 200, agentCard(baseUrl(req), await knownAgent(x, x.params.agent!))),
    },
    { method: 'POST', path: '/a2a/{agent}', tag, summary: 'A2A JSON-RPC: message/send, message/stream, tasks/get on the agent', sse: 'optional', handler: (_req, res, x) => rpc(res, x, x.params.agent!) },
    {
      method: 'GET', path: '/.well-known/agent-card.json', tag, summary: 'The daemon\'s A2A card: one skill per agent',
      handler: async (req, res, x) => sendJson(res, 200, directoryCard(baseUrl(req), await agentNames((op, args) => x.call(op, args)))),
    },
    { method: 'POST', path: '/a2a', tag, summary: 'A2A JSON-RPC for the directory card: the agent is metadata.agent', sse: 'optional', handler: (_req, res, x) => rpc(res, x, null) },
  ];
}

function directoryCard(base: string, agents: { name: string; description: string }[]): Record<string, unknown> {
  const card = agentCard(base, { name: 'agentd', description: 'every agent of this agentd daemon; name one with metadata.agent on the message' });
  return { ...card, url: `${base}/a2a`, supportedInterfaces: interfacesOf(`${base}/a2a`), skills: agents.map((a) => ({ id: a.name, name: a.name, description: a.description === '' ? `talk to ${a.name}` : a.description, tags: ['agentd'] })) };
}
