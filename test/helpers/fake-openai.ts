/**
 * A local OpenAI-compatible endpoint that streams real SSE over loopback.
 * The scenario is picked by the request's `model`:
 *
 *   text        three content deltas, then usage
 *   reasoning   reasoning_content deltas, then content
 *   tools       first call: two tool calls in pieces (parallel); after tool results: text naming them
 *   error-mid   one content delta, then an error event
 *   flaky       429 on the first attempt, then `text`
 *   down        500 on every attempt
 *   hold        one delta, then holds the response open until the client aborts
 *   held        first step: one delta, then holds until `release()`, then one more; later steps: the last
 *               user message back as text (a barrier for a test that acts while the model answers)
 *   parallel    first call: tools `slow` then `fast` in one step; after results: text
 *   unauthorized  401 whose body quotes the request's Authorization header and key
 *   leak        streams the request's key and its `x-org-secret` header back, 3 chars a delta,
 *               in thinking and in text
 *   call:A,B    one tool per step (A, then B, ...) with `{}` arguments; then the last tool result as text
 *
 * With `{ modelsUnauthorized: true }`, GET /models answers like `unauthorized` too.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export interface RecordedRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, any>;
}

export interface FakeOpenAI {
  url: string;
  requests: RecordedRequest[];
  /** Requests that were aborted by the client while held open. */
  aborted: number;
  /** Requests whose response has neither ended nor been closed by the client (whatever the model). */
  open: number;
  /** Lets every `held` response waiting now go on; one that arrives later waits for the next call (wait for its first chunk). */
  release(): void;
  close(): Promise<void>;
}

const sse = (res: ServerResponse, data: unknown): void => void res.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
const delta = (d: Record<string, unknown>) => ({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: d, finish_reason: null }] });
const usage = (p: number, c: number) => ({ id: 'c', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: p, completion_tokens: c, total_tokens: p + c, prompt_tokens_details: { cached_tokens: 2 } } });

/** `call:A,B`: step n calls tool n; once every tool has answered, the last answer comes back as text. */
function scriptedCalls(res: ServerResponse, tools: string[], body: Record<string, any>): void {
  const results = (body.messages as { role: string; content: string }[]).filter((m) => m.role === 'tool');
  const next = tools[results.length];
  if (next !== undefined) sse(res, delta({ tool_calls: [{ index: 0, id: `call_${results.length}`, type: 'function', function: { name: next, arguments: '{}' } }] }));
  else sse(res, delta({ content: results.at(-1)?.content ?? '' }));
}

/** A 401 body the way a careless gateway writes it: quoting what it was sent. */
function unauthorized(res: ServerResponse, headers: IncomingMessage['headers']): void {
  const auth = String(headers.authorization ?? '');
  res.writeHead(401, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { message: `invalid credentials: "authorization: ${auth}"; key ${auth.replace(/^Bearer /, '')} is revoked` } }));
}

/** `text` in deltas of 3 characters, so any secret in it spans several. */
const pieces = (text: string): string[] => text.match(/[\s\S]{1,3}/g) ?? [];

export async function startFakeOpenAI(
  models = ['text', 'reasoning', 'tools', 'error-mid', 'flaky', 'down', 'hold'],
  opts: { modelsUnauthorized?: boolean } = {},
): Promise<FakeOpenAI> {
  // What `held` responses wait on; release() settles it and lays the next one.
  let letGo = (): void => {};
  let held = new Promise<void>((r) => (letGo = r));
  const release = (): void => {
    letGo();
    held = new Promise<void>((r) => (letGo = r));
  };
  const state: FakeOpenAI = { url: '', requests: [], aborted: 0, open: 0, release, close: async () => {} };
  const attempts = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    state.open++;
    res.once('close', () => state.open--);
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const body = raw ? (JSON.parse(raw) as Record<string, any>) : {};
      state.requests.push({ path: req.url ?? '', headers: req.headers, body });
      if (req.method === 'GET' && req.url === '/v1/models') {
        if (opts.modelsUnauthorized === true) return unauthorized(res, req.headers);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: models.map((id) => ({ id, object: 'model' })) }));
        return;
      }
      if (req.url !== '/v1/chat/completions') {
        res.writeHead(404).end();
        return;
      }
      const model = String(body.model);
      if (model === 'unauthorized') return unauthorized(res, req.headers);
      const n = (attempts.get(model) ?? 0) + 1;
      attempts.set(model, n);
      if (model === 'down' || (model === 'flaky' && n === 1)) {
        res.writeHead(model === 'down' ? 500 : 429, { 'content-type': 'application/json', 'retry-after': '0' });
        res.end(JSON.stringify({ error: { message: model === 'down' ? 'the model is down for maintenance' : 'slow down' } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      switch (model) {
        case 'text':
        case 'flaky':
          for (const t of ['Hello', ',', ' world']) sse(res, delta({ content: t }));
          sse(res, usage(5, 3));
          break;
        case 'reasoning':
          sse(res, delta({ reasoning_content: 'Let me ' }));
          sse(res, delta({ reasoning_content: 'think.' }));
          sse(res, delta({ content: 'Answer.' }));
          sse(res, usage(4, 6));
          break;
        case 'tools': {
          const results = (body.messages as { role: string; content: string; tool_call_id?: string }[]).filter((m) => m.role === 'tool');
          if (results.length === 0) {
            sse(res, delta({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'pe', arguments: '' } }] }));
            sse(res, delta({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'skill', arguments: '{"na' } }] }));
            sse(res, delta({ tool_calls: [{ index: 0, function: { name: 'ers', arguments: '{}' } }] }));
            sse(res, delta({ tool_calls: [{ index: 1, function: { arguments: 'me":"none"}' } }] }));
            sse(res, usage(10, 7));
          } else {
            sse(res, delta({ content: `got ${results.map((r) => r.tool_call_id).join(',')}` }));
            sse(res, usage(20, 2));
          }
          break;
        }
        case 'parallel': {
          const results = (body.messages as { role: string }[]).filter((m) => m.role === 'tool');
          if (results.length === 0) {
            sse(res, delta({ tool_calls: [{ index: 0, id: 'call_slow', type: 'function', function: { name: 'slow', arguments: '{}' } }] }));
            sse(res, delta({ tool_calls: [{ index: 1, id: 'call_fast', type: 'function', function: { name: 'fast', arguments: '{}' } }] }));
          } else sse(res, delta({ content: 'both done' }));
          break;
        }
        case 'error-mid':
          sse(res, delta({ content: 'partial' }));
          sse(res, { error: { message: 'upstream exploded' } });
          break;
        case 'leak': {
          const key = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
          for (const t of pieces(`org ${String(req.headers['x-org-secret'])} ok`)) sse(res, delta({ reasoning_content: t }));
          for (const t of pieces(`your key is ${key}, twice: ${key}.`)) sse(res, delta({ content: t }));
          break;
        }
        case 'held': {
          const messages = body.messages as { role: string; content: string }[];
          if (messages.some((m) => m.role === 'assistant')) {
            sse(res, delta({ content: messages.filter((m) => m.role === 'user').at(-1)?.content ?? '' }));
            sse(res, usage(6, 2));
            break;
          }
          sse(res, delta({ content: 'held' }));
          void held.then(() => {
            sse(res, delta({ content: ' then released' }));
            sse(res, usage(4, 3));
            sse(res, '[DONE]');
            res.end();
          });
          return;
        }
        case 'hold':
          sse(res, delta({ content: 'waiting' }));
          res.on('close', () => state.aborted++);
          return; // never ends on its own
        default:
          if (model.startsWith('call:')) scriptedCalls(res, model.slice('call:'.length).split(','), body);
          else sse(res, delta({ content: `unknown model ${model}` }));
      }
      sse(res, '[DONE]');
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  state.url = `http://127.0.0.1:${port}/v1`;
  state.close = () =>
    new Promise((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return state;
}
