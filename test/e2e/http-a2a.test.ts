/**
 * A2A on the HTTP door, driven by the official A2A JavaScript SDK's client
 * (ClientFactory over JSON-RPC, its v0.3 transport): the agent's card,
 * message/send, message/stream and tasks/get, each a turn or a run of the
 * daemon's.
 */
import { randomUUID } from 'node:crypto';
import { Role, TaskState, type Message, type Task } from '@a2a-js/sdk';
import { Client, ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { LegacyJsonRpcTransport } from '@a2a-js/sdk/compat/v0_3/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, startDaemon, historyContents } from '../helpers/daemon.ts';
import { httpParts, type HttpDaemon } from '../helpers/http-daemon.ts';

let h: HttpDaemon;
let authedFetch: typeof fetch;

beforeAll(async () => {
  h = httpParts(await startDaemon({ config: { agents: { assistant: { model: 'echo', description: 'echoes' }, other: { model: 'echo' } } }, args: ['--http', '127.0.0.1:0'] }));
  authedFetch = (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string> | undefined), authorization: `Bearer ${h.token}` } });
});
afterAll(() => cleanup(h.daemon));

function factory(): ClientFactory {
  return new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: authedFetch })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: authedFetch }),
  }));
}

function userMessage(text: string, contextId = '', metadata?: Record<string, unknown>): Message {
  return { messageId: randomUUID(), contextId, taskId: '', role: Role.ROLE_USER, parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }], metadata, extensions: [], referenceTaskIds: [] };
}

const send = (message: Message): Parameters<Client['sendMessage']>[0] => ({ tenant: '', message, configuration: undefined, metadata: undefined });

function textOf(parts: { content?: { $case: string; value: unknown } }[] | undefined): string {
  return (parts ?? []).map((p) => (p.content?.$case === 'text' ? String(p.content.value) : '')).join('');
}

const history = (agent: string, sender: string): Promise<string[]> => historyContents(h.daemon, agent, sender);

describe('A2A 1.0 (the SDK client\'s own protocol)', () => {
  it('serves each agent\'s card, and the directory card; cards need the token', async () => {
    const card = await new DefaultAgentCardResolver({ fetchImpl: authedFetch }).resolve(`${h.base}/a2a/assistant/`);
    expect(card.name).toBe('assistant');
    expect(card.description).toBe('echoes');
    expect(card.capabilities?.streaming).toBe(true);
    expect(card.supportedInterfaces.map((i) => [i.url, i.protocolBinding, i.protocolVersion])).toEqual([
      [`${h.base}/a2a/assistant`, 'JSONRPC', '1.0'],
      [`${h.base}/a2a/assistant`, 'JSONRPC', '0.3'],
    ]);
    const raw = await (await authedFetch(`${h.base}/.well-known/agent-card.json`)).json() as { url: string; skills: { id: string }[] };
    expect(raw.url).toBe(`${h.base}/a2a`);
    expect(raw.skills.map((s) => s.id)).toEqual(['assistant', 'other']);
    expect((await fetch(`${h.base}/a2a/assistant/.well-known/agent-card.json`)).status).toBe(401);
    expect((await authedFetch(`${h.base}/a2a/nobody/.well-known/agent-card.json`)).status).toBe(404);
  });

  it('message/send runs a turn of (agent, contextId) and answers a completed task; tasks/get finds it by the run id', async () => {
    const client = await factory().createFromUrl(`${h.base}/a2a/assistant/`);
    const result = await client.sendMessage(send(userMessage('hello over a2a', 'ctx-1')));
    const task = result as Task;
    expect(task.id).toMatch(/^r[0-9a-f]{8}-/);
    expect(task.contextId).toBe('ctx-1');
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(task.artifacts[0]?.parts)).toBe('hello over a2a');
    expect(await history('assistant', 'ctx-1')).toEqual(['hello over a2a', 'hello over a2a']);
    const got = await client.getTask({ tenant: '', id: task.id });
    expect(got).toMatchObject({ id: task.id, contextId: 'ctx-1' });
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    await expect(client.getTask({ tenant: '', id: 'r00000000-0-1' })).rejects.toThrow(/not found/i);
  });

  it('message/stream sends the task, working, the reply as artifact chunks, then the final completed status', async () => {
    const client = await factory().createFromUrl(`${h.base}/a2a/assistant/`);
    const events = [];
    for await (const e of client.sendMessageStream(send(userMessage('streamed over a2a', 'ctx-2')))) events.push(e);
    const cases = events.map((e) => e.payload?.$case);
    expect(cases[0]).toBe('task');
    expect(cases[1]).toBe('statusUpdate');
    expect(cases.at(-1)).toBe('statusUpdate');
    const chunks = events.flatMap((e) => (e.payload?.$case === 'artifactUpdate' ? [textOf(e.payload.value.artifact?.parts)] : []));
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.join('')).toBe('streamed over a2a');
    const last = events.at(-1)!.payload;
    if (last?.$case !== 'statusUpdate') throw new Error('no final status');
    expect(last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(await history('assistant', 'ctx-2')).toEqual(['streamed over a2a', 'streamed over a2a']);
  });

  it('the directory endpoint takes the agent from metadata.agent; without one it is an invalid-params error and nothing runs', async () => {
    const client = await factory().createFromUrl(h.base);
    const task = (await client.sendMessage(send(userMessage('to other', 'ctx-3', { agent: 'other' })))) as Task;
    expect(textOf(task.artifacts[0]?.parts)).toBe('to other');
    expect(await history('other', 'ctx-3')).toEqual(['to other', 'to other']);
    await expect(client.sendMessage(send(userMessage('to nobody', 'ctx-4')))).rejects.toThrow(/name the agent/);
    await expect(history('assistant', 'ctx-4')).rejects.toMatchObject({ code: 404 });
  });
});

describe('A2A 0.3 (message/send, message/stream, tasks/get), through the SDK\'s 0.3 transport', () => {
  async function legacyClient(): Promise<Client> {
    const card = await new DefaultAgentCardResolver({ fetchImpl: authedFetch }).resolve(`${h.base}/a2a/assistant/`);
    return new Client(new LegacyJsonRpcTransport({ endpoint: `${h.base}/a2a/assistant`, fetchImpl: authedFetch }), card);
  }

  it('message/send answers a completed task, message/stream its events, tasks/get the run', async () => {
    const client = await legacyClient();
    const task = (await client.sendMessage(send(userMessage('legacy hello', 'ctx-l1')))) as Task;
    expect(task.contextId).toBe('ctx-l1');
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(task.artifacts[0]?.parts)).toBe('legacy hello');
    const events = [];
    for await (const e of client.sendMessageStream(send(userMessage('legacy streamed words', 'ctx-l1')))) events.push(e);
    expect(events.map((e) => e.payload?.$case)[0]).toBe('task');
    expect(events.flatMap((e) => (e.payload?.$case === 'artifactUpdate' ? [textOf(e.payload.value.artifact?.parts)] : [])).join('')).toBe('legacy streamed words');
    expect((await client.getTask({ tenant: '', id: task.id })).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(await history('assistant', 'ctx-l1')).toEqual(['legacy hello', 'legacy hello', 'legacy streamed words', 'legacy streamed words']);
  });

  it('speaks 0.3\'s own JSON on the wire; an unknown method is -32601, a body that is not JSON -32700', async () => {
    const rpc = async (body: string): Promise<{ result?: { kind: string; status: { state: string } }; error?: { code: number } }> =>
      (await (await authedFetch(`${h.base}/a2a/assistant`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).json()) as never;
    const sent = await rpc(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'message/send', params: { message: { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'raw' }], contextId: 'ctx-raw' } } }));
    expect(sent.result).toMatchObject({ kind: 'task', contextId: 'ctx-raw', status: { state: 'completed' } });
    expect((await rpc(JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tasks/nothing' }))).error?.code).toBe(-32004);
    expect((await rpc(JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'nothing' }))).error?.code).toBe(-32601);
    expect((await rpc('{not json')).error?.code).toBe(-32700);
  });
});
