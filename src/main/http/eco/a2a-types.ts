/**
 * The A2A protocol's v0.3 JSON-RPC shapes (a2a.ts works in them; a2a-v1.ts translates for 1.0) (the `message/send`,
 * `message/stream` and `tasks/get` methods, `kind`-tagged objects), as the
 * A2A specification 0.3 gives them and the `@a2a-js/sdk` client's v0.3
 * transport reads them. Only what the routes send and take.
 */
import type { IncomingMessage } from 'node:http';

export const A2A_PROTOCOL_VERSION = '0.3.0';

/** JSON-RPC and A2A error codes. */
export const RpcError = {
  Parse: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  Internal: -32603,
  TaskNotFound: -32001,
  UnsupportedOperation: -32004,
} as const;

export type TaskState = 'submitted' | 'working' | 'input-required' | 'completed' | 'canceled' | 'failed' | 'rejected' | 'auth-required' | 'unknown';

export interface TextPart {
  kind: 'text';
  text: string;
}

export interface A2AMessage {
  kind: 'message';
  messageId: string;
  role: 'user' | 'agent';
  parts: TextPart[];
  contextId?: string;
  taskId?: string;
  metadata?: Record<string, unknown>;
}

export interface TaskStatus {
  state: TaskState;
  message?: A2AMessage;
  timestamp: string;
}

export interface Artifact {
  artifactId: string;
  name?: string;
  parts: TextPart[];
}

export interface Task {
  kind: 'task';
  id: string;
  contextId: string;
  status: TaskStatus;
  artifacts?: Artifact[];
  history?: A2AMessage[];
  metadata?: Record<string, unknown>;
}

export interface TaskStatusUpdateEvent {
  kind: 'status-update';
  taskId: string;
  contextId: string;
  status: TaskStatus;
  final: boolean;
}

export interface TaskArtifactUpdateEvent {
  kind: 'artifact-update';
  taskId: string;
  contextId: string;
  artifact: Artifact;
  append: boolean;
  lastChunk: boolean;
}

/** A JSON-RPC error raised by a method: answered as `{"jsonrpc", "id", "error": {code, message}}`. */
export class RpcFailure extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

/** The URL the daemon is reached at, from the request's Host (cards name their endpoints with it). */
export function baseUrl(req: IncomingMessage): string {
  return `http://${req.headers.host ?? '127.0.0.1'}`;
}

function endpointOf(base: string, agent: string): string {
  return `${base}/a2a/${encodeURIComponent(agent)}`;
}

/** The JSON-RPC endpoint, as A2A 1.0's interfaces list it: the same URL speaks 1.0 and 0.3. */
export function interfacesOf(url: string): Record<string, string>[] {
  return [{ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }, { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' }];
}

/** An agent's card (A2A 1.0's `supportedInterfaces`, and 0.3's `url` and `preferredTransport` for 0.3 clients): its JSON-RPC endpoint, streaming, text in and out, bearer auth. */
export function agentCard(base: string, agent: { name: string; description: string }): Record<string, unknown> {
  return {
    protocolVersion: A2A_PROTOCOL_VERSION,
    name: agent.name,
    description: agent.description === '' ? `the agentd agent "${agent.name}"` : agent.description,
    url: endpointOf(base, agent.name),
    supportedInterfaces: interfacesOf(endpointOf(base, agent.name)),
    preferredTransport: 'JSONRPC',
    version: '1',
    capabilities: { streaming: true, pushNotifications: false, stateTransitionHistory: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: agent.name, name: agent.name, description: agent.description === '' ? `talk to ${agent.name}` : agent.description, tags: ['agentd'] }],
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'the agentd home token' } },
    security: [{ bearer: [] }],
  };
}
