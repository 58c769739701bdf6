/**
 * Reading and writing HTTP bodies: JSON bodies bounded by `max_body_bytes`,
 * JSON replies, and errors as `{"error": {"code", "message"}}` with the
 * protocol's code as the HTTP status (PROTOCOL §2's codes are HTTP's).
 */
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import { AgentdError, Code, toWireError } from '../../shared/errors.ts';

/** Reason phrases for the protocol's codes Node does not name. */
const REASONS: Record<number, string> = { 499: 'Client Closed Request' };

export function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const body = JSON.stringify(value ?? null);
  res.writeHead(status, REASONS[status] ?? STATUS_CODES[status] ?? 'Unknown', {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    ...headers,
  });
  res.end(body);
}

/** An error as the wire has it; `close` asks the client to drop the connection (a body left unread). */
export function sendError(res: ServerResponse, err: unknown, close = false): void {
  const { code, message } = toWireError(err);
  sendJson(res, code, { error: { code, message } }, close ? { connection: 'close' } : {});
}

/** How a body's length compares with the limit, from `content-length` alone: null when it is not announced. */
export function announcedLength(req: IncomingMessage): number | null {
  const header = req.headers['content-length'];
  if (header === undefined) return null;
  const n = Number(header);
  return Number.isSafeInteger(n) && n >= 0 ? n : null;
}

export function tooLarge(bytes: number, max: number): AgentdError {
  return new AgentdError(Code.TooLarge, `request body of ${bytes} bytes exceeds the limit of ${max} bytes (max_body_bytes)`);
}

/**
 * The request's body as text, at most `max` bytes: a larger announced length
 * is refused before any of it is read, a longer chunked body as soon as it
 * passes the limit (413 either way; the caller closes the connection).
 */
export function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  const announced = announcedLength(req);
  if (announced !== null && announced > max) return Promise.reject(tooLarge(announced, max));
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    let settled = false;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > max) {
        req.off('data', onData);
        settled = true;
        reject(tooLarge(size, max));
        return;
      }
      parts.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => {
      settled = true;
      resolve(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
    });
    req.once('error', reject);
    req.once('close', () => settled || reject(new AgentdError(Code.Cancelled, 'the client closed the request before its body was read')));
  });
}

/** The body parsed as a JSON object; an empty body is `{}`. 400 for anything else. */
export async function readJsonObject(req: IncomingMessage, max: number): Promise<Record<string, unknown>> {
  const bytes = await readBody(req, max);
  if (bytes.length === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw new AgentdError(Code.BadRequest, `body is not valid JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new AgentdError(Code.BadRequest, 'body must be a JSON object');
  }
  return value as Record<string, unknown>;
}
