/**
 * A streaming chat-completions client for any OpenAI-compatible endpoint
 * (OpenAI, vLLM, Ollama, llama.cpp server, LM Studio, gateways).
 *
 * Built on fetch and eventsource-parser rather than the `openai` package:
 * the endpoints we target differ in small ways (reasoning as
 * `reasoning_content` or `reasoning`, usage only with stream_options, error
 * bodies of several shapes), and a small client that reads the stream as
 * plain JSON handles them all with no SDK between us and the bytes. The
 * parser is a well-kept, dependency-free SSE tokenizer.
 *
 * The API key is read from the environment at request time and goes only
 * into the Authorization header: never into a log, an error or a reply. An
 * endpoint that quotes the request back in an error has it redacted here.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createParser } from 'eventsource-parser';
import { DEFAULT_PROVIDER_TIMEOUT_MS, type ProviderConfig } from '../shared/config.ts';
import type { Logger } from '../shared/log.ts';
import { apiUrl, authHeaders, httpFailure, ProviderError, redactProviderText } from '../shared/provider-http.ts';
import type { ToolCall, Usage } from '../shared/protocol.ts';
import type { Model, ModelEvent, ModelRequest } from './types.ts';
import { requestBody } from './openai-wire.ts';

/** Retries of a 429 or 5xx that came before any output. */
export const MAX_RETRIES = 3;
const BACKOFF_BASE_MS = 200;
const BACKOFF_MAX_MS = 5_000;

interface WireToolCall {
  index?: number;
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}

interface WireChunk {
  choices?: { delta?: { content?: string | null; reasoning_content?: string | null; reasoning?: string | null; tool_calls?: WireToolCall[] } }[];
  usage?: {
    prompt_tokens?: number;
    completion_tokens?: number;
    total_tokens?: number;
    prompt_tokens_details?: { cached_tokens?: number };
    completion_tokens_details?: { reasoning_tokens?: number };
  } | null;
  error?: { message?: string } | string;
}

function usageOf(u: NonNullable<WireChunk['usage']>): Usage {
  const usage: Usage = {
    prompt_tokens: u.prompt_tokens ?? 0,
    completion_tokens: u.completion_tokens ?? 0,
    total_tokens: u.total_tokens ?? (u.prompt_tokens ?? 0) + (u.completion_tokens ?? 0),
  };
  const cached = u.prompt_tokens_details?.cached_tokens;
  if (cached !== undefined) {
    usage.cache_hit_tokens = cached;
    usage.cache_miss_tokens = usage.prompt_tokens - cached;
  }
  const reasoning = u.completion_tokens_details?.reasoning_tokens;
  if (reasoning !== undefined) usage.reasoning_tokens = reasoning;
  return usage;
}

function backoffMs(attempt: number, retryAfter: string | null): number {
  const seconds = retryAfter === null ? NaN : Number(retryAfter);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, BACKOFF_MAX_MS);
  return Math.min(BACKOFF_BASE_MS * 2 ** attempt, BACKOFF_MAX_MS) * (0.5 + Math.random() / 2);
}

/**
 * Aborts when nothing arrived for `ms`: armed while connecting, waiting for
 * the first byte and between chunks; paused during a retry's backoff.
 */
class SilenceTimer {
  readonly #controller = new AbortController();
  #timer: NodeJS.Timeout | undefined;

  constructor(readonly ms: number) {}

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get fired(): boolean {
    return this.#controller.signal.aborted;
  }

  arm(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#controller.abort(new Error('timeout_ms')), this.ms);
  }

  pause(): void {
    clearTimeout(this.#timer);
  }
}

export class OpenAIModel implements Model {
  readonly name: string;
  readonly #cfg: ProviderConfig;
  readonly #log: Logger | null;

  constructor(providerName: string, cfg: ProviderConfig, log: Logger | null = null) {
    this.name = providerName;
    this.#cfg = cfg;
    this.#log = log;
  }

  async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    const silence = new SilenceTimer(this.#cfg.timeout_ms ?? DEFAULT_PROVIDER_TIMEOUT_MS);
    try {
      yield* this.#stream(request, silence);
    } catch (err) {
      if (silence.fired && !request.cancel.signal.aborted) throw this.#timedOut(silence.ms);
      throw err;
    } finally {
      silence.pause();
    }
  }

  async *#stream(request: ModelRequest, silence: SilenceTimer): AsyncIterable<ModelEvent> {
    const { cancel } = request;
    const res = await this.#post(requestBody(request), cancel.signal, silence);

    const calls = new Map<number, ToolCall>();
    let usage: Usage | null = null;
    let finished = false;
    const pending: string[] = [];
    const parser = createParser({ onEvent: (ev) => pending.push(ev.data) });
    const decoder = new TextDecoder();
    for await (const bytes of res.body as unknown as AsyncIterable<Uint8Array>) {
      silence.pause(); // the consumer's time (tool runs come later) is not the provider's
      parser.feed(decoder.decode(bytes, { stream: true }));
      while (pending.length > 0) {
        const data = pending.shift()!;
        if (data.trim() === '[DONE]') {
          finished = true;
          continue;
        }
        let chunk: WireChunk;
        try {
          chunk = JSON.parse(data) as WireChunk;
        } catch {
          throw this.#fail('the endpoint sent a stream event that is not JSON');
        }
        if (chunk.error !== undefined) {
          const msg = typeof chunk.error === 'string' ? chunk.error : (chunk.error.message ?? 'unknown error');
          throw this.#fail(msg);
        }
        if (chunk.usage) usage = usageOf(chunk.usage);
        const delta = chunk.choices?.[0]?.delta;
        if (delta === undefined) continue;
        const thinking = delta.reasoning_content ?? delta.reasoning;
        if (thinking) yield { type: 'thinking', delta: thinking };
        if (delta.content) yield { type: 'text', delta: delta.content };
        for (const piece of delta.tool_calls ?? []) {
          const index = piece.index ?? calls.size;
          let call = calls.get(index);
          if (call === undefined) calls.set(index, (call = { id: '', name: '', arguments: '' }));
          if (piece.id) call.id = piece.id;
          if (piece.function?.name) call.name += piece.function.name;
          if (piece.function?.arguments) call.arguments += piece.function.arguments;
        }
      }
      silence.arm();
    }
    silence.pause();
    if (!finished && calls.size === 0 && usage === null) {
      // Some servers omit [DONE]; a stream that ends with nothing at all is an error.
      cancel.throwIfAborted();
    }
    for (const [index, call] of [...calls].sort((a, b) => a[0] - b[0])) {
      yield { type: 'tool_call', call: { ...call, id: call.id || `call_${index}` } };
    }
    if (usage !== null) yield { type: 'usage', usage };
  }

  async #post(body: string, cancel: AbortSignal, silence: SilenceTimer): Promise<Response> {
    const url = apiUrl(this.#cfg.base_url, 'chat/completions');
    const signal = AbortSignal.any([cancel, silence.signal]);
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      silence.arm();
      try {
        res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...authHeaders(this.#cfg) }, body, signal });
      } catch (err) {
        if (signal.aborted) throw err;
        throw this.#fail(`cannot reach ${this.#cfg.base_url}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`);
      }
      if (res.ok && res.body !== null) return res;
      const text = await res.text();
      const retryable = res.status === 429 || res.status >= 500;
      if (retryable && attempt < MAX_RETRIES) {
        const waitMs = backoffMs(attempt, res.headers.get('retry-after'));
        this.#log?.info({ provider: this.name, status: res.status, attempt: attempt + 1, wait_ms: Math.round(waitMs) }, 'provider answered with a retryable error: retrying');
        silence.pause();
        await sleep(waitMs, undefined, { signal: cancel });
        continue;
      }
      throw this.#fail(httpFailure(res.status, res.statusText, text), res.status);
    }
  }

  #timedOut(ms: number): ProviderError {
    return new ProviderError(`provider "${this.name}" sent nothing for ${ms} ms (timeout_ms)`);
  }

  /** An error naming this provider, with what it was sent (key, header values, Authorization) redacted. */
  #fail(message: string, status: number | null = null): ProviderError {
    return new ProviderError(`${this.name}: ${redactProviderText(this.#cfg, message)}`, status);
  }
}
