/**
 * OpenAI-compatible chat completions (`POST /v1/chat/completions`) and the
 * agents as models (`GET /v1/models`, `GET /v1/models/{model}`):
 * docs/http-ecosystem.md. `model` names the agent, `user` the sender (absent:
 * the daemon's `default_sender`), and the newest `user` message is the turn's
 * content: the conversation's history is the daemon's, not the request's.
 * Tools the agent calls run inside the turn; the reply is its final text.
 */
import type { ServerResponse } from 'node:http';
import { AgentdError, Code } from '../../../shared/errors.ts';
import { sendJson } from '../http-io.ts';
import type { HttpExchange, HttpRoute } from '../router.ts';
import { DataStream, openAiError, requiredString, sendOpenAiError, senderOf, streamFlag, textOf } from './openai-shared.ts';
import { agentNames, runTurn, turnEvents, unixNow, type TurnEnd, type TurnUsage } from './turn.ts';

/** The content of the newest `user` message. */
export function newestUserMessage(messages: unknown): string {
  if (!Array.isArray(messages) || messages.length === 0) throw new AgentdError(Code.BadRequest, 'messages is required: a non-empty array');
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { role?: unknown; content?: unknown } | null;
    if (m !== null && typeof m === 'object' && m.role === 'user') return textOf(m.content, `messages[${i}].content`);
  }
  throw new AgentdError(Code.BadRequest, 'messages holds no user message');
}

function finishReason(end: TurnEnd): string {
  return end.stop_reason === 'max_iterations' ? 'length' : 'stop';
}

function usageOf(u: TurnUsage): Record<string, unknown> {
  return {
    prompt_tokens: u.prompt_tokens,
    completion_tokens: u.completion_tokens,
    total_tokens: u.total_tokens,
    prompt_tokens_details: { cached_tokens: u.cache_hit_tokens ?? 0 },
    completion_tokens_details: { reasoning_tokens: u.reasoning_tokens ?? 0 },
  };
}

/** A failed or cancelled turn, as an error: 499 cancelled, 500 otherwise. */
export function turnError(end: TurnEnd): AgentdError {
  return new AgentdError(end.stop_reason === 'cancelled' ? Code.Cancelled : Code.Internal, end.error === '' ? `the turn ended ${end.stop_reason}` : end.error);
}

interface ChatRequest {
  agent: string;
  sender: string | null;
  content: string;
  stream: boolean;
  includeUsage: boolean;
}

function chatRequest(body: Record<string, unknown>): ChatRequest {
  const opts = body.stream_options as { include_usage?: unknown } | undefined | null;
  return {
    agent: requiredString(body, 'model'),
    sender: senderOf(body),
    content: newestUserMessage(body.messages),
    stream: streamFlag(body),
    includeUsage: opts?.include_usage === true,
  };
}

async function completion(res: ServerResponse, x: HttpExchange, r: ChatRequest): Promise<void> {
  const out = await runTurn(x.requester(), { agent: r.agent, sender: r.sender, content: r.content });
  if (out.end.error !== '') throw turnError(out.end);
  sendJson(res, 200, {
    id: `chatcmpl-${out.runId}`,
    object: 'chat.completion',
    created: unixNow(),
    model: r.agent,
    system_fingerprint: out.end.model,
    choices: [{ index: 0, message: { role: 'assistant', content: out.text, refusal: null }, logprobs: null, finish_reason: finishReason(out.end) }],
    usage: usageOf(out.end.usage),
  });
}

/** The turn as `chat.completion.chunk` events, then `data: [DONE]`; a turn that fails after the headers ends with an `error` event. */
async function streamCompletion(res: ServerResponse, x: HttpExchange, r: ChatRequest): Promise<void> {
  const sse = new DataStream(res);
  const created = unixNow();
  let id = '';
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): unknown => ({ id, object: 'chat.completion.chunk', created, model: r.agent, choices, ...extra });
  try {
    for await (const ev of turnEvents(x.requester(), { agent: r.agent, sender: r.sender, content: r.content })) {
      if (ev.kind === 'start') {
        id = `chatcmpl-${ev.runId}`;
        sse.open();
        sse.send(chunk([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]));
      } else if (ev.kind === 'delta') {
        if (ev.text !== '') sse.send(chunk([{ index: 0, delta: { content: ev.text }, logprobs: null, finish_reason: null }]));
      } else {
        if (ev.end.error !== '') throw turnError(ev.end);
        sse.send(chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: finishReason(ev.end) }]));
        if (r.includeUsage) sse.send(chunk([], { usage: usageOf(ev.end.usage) }));
      }
    }
  } catch (err) {
    if (!res.headersSent) return sendOpenAiError(res, err, r.agent);
    sse.send(openAiError(err, r.agent).body);
  }
  sse.send('[DONE]');
  sse.end();
}

export function chatCompletionsRoute(): HttpRoute {
  return {
    method: 'POST',
    path: '/v1/chat/completions',
    tag: 'openai',
    summary: 'OpenAI-compatible chat completion: model = the agent, user = the sender, the newest user message is the turn (docs/http-ecosystem.md)',
    sse: 'optional',
    handler: async (_req, res, x) => {
      let r: ChatRequest | null = null;
      try {
        r = chatRequest(await x.readJson());
        await (r.stream ? streamCompletion(res, x, r) : completion(res, x, r));
      } catch (err) {
        sendOpenAiError(res, err, r?.agent);
      }
    },
  };
}

function modelOf(a: { name: string }): Record<string, unknown> {
  return { id: a.name, object: 'model', created: 0, owned_by: 'agentd' };
}

/** `GET /v1/models`: every agent as an OpenAI model. It takes the place of the REST route of the same path (list_models is the providers' models). */
export function modelsRoute(): HttpRoute {
  return {
    method: 'GET',
    path: '/v1/models',
    tag: 'openai',
    op: 'list_agents',
    summary: 'The agents, as an OpenAI model list (docs/http-ecosystem.md)',
    handler: async (_req, res, x) => {
      try {
        sendJson(res, 200, { object: 'list', data: (await agentNames((op, args) => x.call(op, args))).map(modelOf) });
      } catch (err) {
        sendOpenAiError(res, err);
      }
    },
  };
}

/** `GET /v1/models/{model}`: one agent as an OpenAI model, 404 `model_not_found` for another name. */
export function modelRoute(): HttpRoute {
  return {
    method: 'GET',
    path: '/v1/models/{model}',
    tag: 'openai',
    summary: 'One agent, as an OpenAI model',
    handler: async (_req, res, x) => {
      const model = x.params.model!;
      try {
        const agents = await agentNames((op, args) => x.call(op, args));
        const found = agents.find((a) => a.name === model);
        if (found === undefined) throw new AgentdError(Code.NotFound, `unknown agent "${model}"`);
        sendJson(res, 200, modelOf(found));
      } catch (err) {
        sendOpenAiError(res, err, model);
      }
    },
  };
}
