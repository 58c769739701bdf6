/**
 * A2A 1.0's JSON-RPC binding beside 0.3's: the methods `SendMessage`,
 * `SendStreamingMessage` and `GetTask` take and give the same tasks as
 * `message/send`, `message/stream` and `tasks/get`, in 1.0's JSON form
 * (ProtoJSON: `ROLE_USER`, `TASK_STATE_COMPLETED`, parts `{text}`, results
 * wrapped as `{task}`, `{statusUpdate}`, `{artifactUpdate}`). a2a.ts works
 * on 0.3's objects; this file translates at the edge.
 */
import type { A2AMessage, Artifact, Task, TaskStatus, TextPart } from './a2a-types.ts';
import { RpcError, RpcFailure } from './a2a-types.ts';

/** 1.0's method name → 0.3's. */
export const V1_METHODS: Readonly<Record<string, string>> = { SendMessage: 'message/send', SendStreamingMessage: 'message/stream', GetTask: 'tasks/get' };

/** 1.0 methods agentd does not serve (answered "unsupported", not "no such method"). */
export const V1_UNSUPPORTED = new Set(['CancelTask', 'ListTasks', 'SubscribeToTask', 'GetExtendedAgentCard', 'CreateTaskPushNotificationConfig', 'GetTaskPushNotificationConfig', 'ListTaskPushNotificationConfigs', 'DeleteTaskPushNotificationConfig']);

/** 1.0 `params` of SendMessage: its message as 0.3's (text parts only). */
export function v1SendParams(params: unknown): unknown {
  const p = params as { message?: Record<string, unknown>; metadata?: Record<string, unknown> } | null;
  const m = p?.message;
  if (m === undefined || m === null || typeof m !== 'object' || !Array.isArray(m.parts)) throw new RpcFailure(RpcError.InvalidParams, 'params.message is required, with parts');
  const parts: TextPart[] = (m.parts as { text?: unknown }[]).flatMap((part) => (typeof part?.text === 'string' ? [{ kind: 'text' as const, text: part.text }] : []));
  const message: A2AMessage = {
    kind: 'message',
    messageId: typeof m.messageId === 'string' ? m.messageId : '',
    role: 'user',
    parts,
    ...(typeof m.contextId === 'string' && m.contextId !== '' ? { contextId: m.contextId } : {}),
    ...(m.metadata !== null && typeof m.metadata === 'object' ? { metadata: m.metadata as Record<string, unknown> } : {}),
  };
  return { message, ...(p?.metadata === undefined ? {} : { metadata: p.metadata }) };
}

function messageV1(m: A2AMessage): Record<string, unknown> {
  return {
    messageId: m.messageId,
    contextId: m.contextId ?? '',
    taskId: m.taskId ?? '',
    role: m.role === 'user' ? 'ROLE_USER' : 'ROLE_AGENT',
    parts: m.parts.map((p) => ({ text: p.text, mediaType: 'text/plain' })),
    ...(m.metadata === undefined ? {} : { metadata: m.metadata }),
  };
}

function statusV1(s: TaskStatus): Record<string, unknown> {
  return { state: `TASK_STATE_${s.state.toUpperCase().replace('-', '_')}`, timestamp: s.timestamp, ...(s.message === undefined ? {} : { message: messageV1(s.message) }) };
}

function artifactV1(a: Artifact): Record<string, unknown> {
  return { artifactId: a.artifactId, name: a.name ?? '', parts: a.parts.map((p) => ({ text: p.text, mediaType: 'text/plain' })) };
}

export function taskV1(t: Task): Record<string, unknown> {
  return {
    id: t.id,
    contextId: t.contextId,
    status: statusV1(t.status),
    artifacts: (t.artifacts ?? []).map(artifactV1),
    history: (t.history ?? []).map(messageV1),
    ...(t.metadata === undefined ? {} : { metadata: t.metadata }),
  };
}

/** A 0.3 result (a task, message, status or artifact update) as 1.0's wrapped stream response or send result. */
export function resultV1(r: unknown): Record<string, unknown> {
  const o = r as { kind: string } & Record<string, unknown>;
  if (o.kind === 'task') return { task: taskV1(o as unknown as Task) };
  if (o.kind === 'message') return { message: messageV1(o as unknown as A2AMessage) };
  if (o.kind === 'status-update') return { statusUpdate: { taskId: o.taskId, contextId: o.contextId, status: statusV1(o.status as TaskStatus), metadata: { final: o.final } } };
  return { artifactUpdate: { taskId: o.taskId, contextId: o.contextId, artifact: artifactV1(o.artifact as Artifact), append: o.append, lastChunk: o.lastChunk } };
}
