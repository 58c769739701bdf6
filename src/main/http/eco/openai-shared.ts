/**
 * What the OpenAI-compatible routes share: errors in OpenAI's shape
 * (`{"error": {"message", "type", "code", "param"}}`, the status the
 * protocol's code), the request fields every route reads (`model` = the
 * agent, `user` = the sender), and `data:`-only server-sent events.
 */
import type { ServerResponse } from 'node:http';
import { AgentdError, Code, toWireError } from '../../../shared/errors.ts';
import { sendJson } from '../http-io.ts';

/** OpenAI's error `type` for a status. */
function errorType(code: number): string {
  if (code === 400 || code === 404 || code === 409 || code === 413) return 'invalid_request_error';
  if (code === 401) return 'authentication_error';
  if (code === 429) return 'rate_limit_error';
  return 'server_error';
}

/** An error as OpenAI writes it: `code` is `model_not_found` for an unknown agent, else the status as a string. */
export function openAiError(err: unknown, model?: string): { status: number; body: { error: { message: string; type: string; code: string; param: string | null } } } {
  const { code, message } = toWireError(err);
  const unknownModel = code === Code.NotFound && model !== undefined && message.startsWith('unknown agent');
  return {
    status: code,
    body: {
      error: {
        message: unknownModel ? `The model \`${model}\` does not exist: ${message}` : message,
        type: errorType(code),
        code: unknownModel ? 'model_not_found' : String(code),
        param: unknownModel ? 'model' : null,
      },
    },
  };
}

export function sendOpenAiError(res: ServerResponse, err: unknown, model?: string): void {
  const { status, body } = openAiError(err, model);
  sendJson(res, status, body);
}

/** A required non-empty string field, else 400. */
export function requiredString(body: Record<string, unknown>, field: string): string {
  const v = body[field];
  if (typeof v !== 'string' || v === '') throw new AgentdError(Code.BadRequest, `${field} is required: a non-empty string`);
  return v;
}

/** `user` (the sender), absent → null (the daemon's `default_sender`); another type is a 400. */
export function senderOf(body: Record<string, unknown>): string | null {
  const v = body.user;
  if (v === undefined || v === null || v === '') return null;
  if (typeof v !== 'string') throw new AgentdError(Code.BadRequest, 'user must be a string (the conversation\'s sender)');
  return v;
}

/** `stream`, absent → false. */
export function streamFlag(body: Record<string, unknown>): boolean {
  const v = body.stream;
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') throw new AgentdError(Code.BadRequest, 'stream must be a boolean');
  return v;
}

/** The text of a message's `content`: a string, or an array of parts whose text parts are joined. */
export function textOf(content: unknown, where: string): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    const texts: string[] = [];
    for (const part of content as unknown[]) {
      const p = part as { type?: unknown; text?: unknown } | null;
      if (p !== null && typeof p === 'object' && typeof p.text === 'string' && (p.type === 'text' || p.type === 'input_text' || p.type === 'output_text')) texts.push(p.text);
      else throw new AgentdError(Code.BadRequest, `${where}: only text content parts are supported`);
    }
    return texts.join('\n');
  }
  throw new AgentdError(Code.BadRequest, `${where} must be a string or an array of text parts`);
}

/** A `data:`-only event stream, as OpenAI sends: `data: <json>` events, `data: [DONE]` last where the API has it. */
export class DataStream {
  readonly #res: ServerResponse;

  constructor(res: ServerResponse) {
    this.#res = res;
  }

  open(): void {
    if (this.#res.headersSent) return;
    this.#res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
    this.#res.flushHeaders();
  }

  /** One event; `event` adds an `event:` line (the Responses API names its events so). */
  send(data: unknown, event?: string): void {
    this.#res.write(`${event === undefined ? '' : `event: ${event}\n`}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
  }

  end(): void {
    this.#res.end();
  }
}
