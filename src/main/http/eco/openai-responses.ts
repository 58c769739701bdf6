/**
 * The OpenAI Responses API (`POST /v1/responses`): docs/http-ecosystem.md.
 * `model` names the agent, `user` the sender, `input` (a string, or the
 * newest `user` message item) is the turn's content. Streaming sends the
 * Responses API's events (`response.created` … `response.completed`), each
 * with its `event:` name and `sequence_number`; otherwise a `response` object.
 */
import type { ServerResponse } from 'node:http';
import { AgentdError, Code, toWireError } from '../../../shared/errors.ts';
import { sendJson } from '../http-io.ts';
import type { HttpExchange, HttpRoute } from '../router.ts';
import { turnError } from './openai-chat.ts';
import { DataStream, requiredString, sendOpenAiError, senderOf, streamFlag, textOf } from './openai-shared.ts';
import { runTurn, turnEvents, unixNow, type TurnEnd } from './turn.ts';

interface ResponsesRequest {
  agent: string;
  sender: string | null;
  content: string;
  stream: boolean;
  instructions: string | null;
}

/** `input`: a string, or the newest `user` message item of an array. */
export function inputText(input: unknown): string {
  if (typeof input === 'string') return input;
  if (!Array.isArray(input) || input.length === 0) throw new AgentdError(Code.BadRequest, 'input is required: a string or a non-empty array of items');
  for (let i = input.length - 1; i >= 0; i--) {
    const item = input[i] as { role?: unknown; content?: unknown; type?: unknown } | null;
    if (item !== null && typeof item === 'object' && item.role === 'user' && (item.type === undefined || item.type === 'message')) return textOf(item.content, `input[${i}].content`);
  }
  throw new AgentdError(Code.BadRequest, 'input holds no user message');
}

function responsesRequest(body: Record<string, unknown>): ResponsesRequest {
  const instructions = typeof body.instructions === 'string' ? body.instructions : null;
  return { agent: requiredString(body, 'model'), sender: senderOf(body), content: inputText(body.input), stream: streamFlag(body), instructions };
}

/** What a response object is made of as the turn goes. */
interface Shape {
  id: string;
  created: number;
  agent: string;
  instructions: string | null;
}

function message(id: string, text: string, done: boolean): Record<string, unknown> {
  return { type: 'message', id, status: done ? 'completed' : 'in_progress', role: 'assistant', content: done ? [outputText(text)] : [] };
}

function outputText(text: string): Record<string, unknown> {
  return { type: 'output_text', text, annotations: [], logprobs: [] };
}

/** The response object: `in_progress` (no end yet), `completed`, `incomplete` (max_iterations) or `failed`. */
function responseObject(s: Shape, text: string | null, end: TurnEnd | null): Record<string, unknown> {
  const failed = end !== null && end.error !== '';
  const status = end === null ? 'in_progress' : failed ? 'failed' : end.stop_reason === 'max_iterations' ? 'incomplete' : 'completed';
  const u = end?.usage;
  return {
    id: s.id,
    object: 'response',
    created_at: s.created,
    status,
    model: s.agent,
    instructions: s.instructions,
    output: end === null || failed ? [] : [message(`msg_${s.id.slice(5)}`, text ?? '', true)],
    error: failed ? { code: 'server_error', message: end.error } : null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    usage: u === undefined ? null : {
      input_tokens: u.prompt_tokens,
      input_tokens_details: { cached_tokens: u.cache_hit_tokens ?? 0 },
      output_tokens: u.completion_tokens,
      output_tokens_details: { reasoning_tokens: u.reasoning_tokens ?? 0 },
      total_tokens: u.total_tokens,
    },
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
    temperature: null,
    top_p: null,
    metadata: {},
    text: { format: { type: 'text' } },
  };
}

async function respond(res: ServerResponse, x: HttpExchange, r: ResponsesRequest): Promise<void> {
  const out = await runTurn(x.requester(), { agent: r.agent, sender: r.sender, content: r.content });
  if (out.end.error !== '') throw turnError(out.end);
  sendJson(res, 200, responseObject({ id: `resp_${out.runId}`, created: unixNow(), agent: r.agent, instructions: r.instructions }, out.text, out.end));
}

/** The Responses API's event sequence for one message of output text. */
async function streamResponse(res: ServerResponse, x: HttpExchange, r: ResponsesRequest): Promise<void> {
  const sse = new DataStream(res);
  let seq = 0;
  const send = (type: string, fields: Record<string, unknown>): void => sse.send({ type, sequence_number: seq++, ...fields }, type);
  let shape: Shape | null = null;
  let itemId = '';
  let text = '';
  const at = { output_index: 0, content_index: 0 };
  try {
    for await (const ev of turnEvents(x.requester(), { agent: r.agent, sender: r.sender, content: r.content })) {
      if (ev.kind === 'start') {
        shape = { id: `resp_${ev.runId}`, created: unixNow(), agent: r.agent, instructions: r.instructions };
        itemId = `msg_${ev.runId}`;
        sse.open();
        send('response.created', { response: responseObject(shape, null, null) });
        send('response.in_progress', { response: responseObject(shape, null, null) });
        send('response.output_item.added', { output_index: 0, item: message(itemId, '', false) });
        send('response.content_part.added', { item_id: itemId, ...at, part: outputText('') });
      } else if (ev.kind === 'delta') {
        text += ev.text;
        if (ev.text !== '') send('response.output_text.delta', { item_id: itemId, ...at, delta: ev.text, logprobs: [] });
      } else if (ev.end.error !== '') {
        send('response.failed', { response: responseObject(shape!, text, ev.end) });
      } else {
        send('response.output_text.done', { item_id: itemId, ...at, text, logprobs: [] });
        send('response.content_part.done', { item_id: itemId, ...at, part: outputText(text) });
        send('response.output_item.done', { output_index: 0, item: message(itemId, text, true) });
        send(ev.end.stop_reason === 'max_iterations' ? 'response.incomplete' : 'response.completed', { response: responseObject(shape!, text, ev.end) });
      }
    }
  } catch (err) {
    if (!res.headersSent) return sendOpenAiError(res, err, r.agent);
    const { code, message: msg } = toWireError(err);
    send('error', { code: String(code), message: msg, param: null });
  }
  sse.end();
}

export function responsesRoute(): HttpRoute {
  return {
    method: 'POST',
    path: '/v1/responses',
    tag: 'openai',
    summary: 'OpenAI Responses API: model = the agent, user = the sender, input is the turn (docs/http-ecosystem.md)',
    sse: 'optional',
    handler: async (_req, res, x) => {
      let r: ResponsesRequest | null = null;
      try {
        r = responsesRequest(await x.readJson());
        await (r.stream ? streamResponse(res, x, r) : respond(res, x, r));
      } catch (err) {
        sendOpenAiError(res, err, r?.agent);
      }
    },
  };
}
