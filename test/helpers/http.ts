/**
 * Real HTTP clients for a daemon's HTTP listener: curl (execFile) for REST
 * routes, and fetch + eventsource-parser for server-sent events.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { Daemon } from './daemon.ts';

export interface HttpTarget {
  base: string;
  token: string;
}

/** Where `d` serves HTTP (its run/http.port) and the token it asks for (its token file). */
export function httpTarget(d: Daemon): HttpTarget {
  const port = Number(readFileSync(join(d.home, 'run', 'http.port'), 'utf8').trim());
  const token = readFileSync(join(d.home, 'token'), 'utf8').trim();
  return { base: `http://127.0.0.1:${port}`, token };
}

export interface CurlResult {
  status: number;
  headers: string;
  body: string;
  /** The body parsed as JSON (undefined when it is not JSON). */
  json: unknown;
}

/**
 * Runs curl against `path` with the target's bearer token (unless `token` is
 * given, or null for none). `args` are more curl arguments (`-X`, `-d`, `-H`;
 * after `--next`, another request on the same connection, with its own URL).
 */
export function curl(t: HttpTarget, path: string, args: string[] = [], token: string | null = t.token): Promise<CurlResult> {
  const auth = token === null ? [] : ['-H', `Authorization: Bearer ${token}`];
  const all = ['-sS', '-i', '--max-time', '30', `${t.base}${path}`, ...auth, ...args];
  return new Promise((resolve, reject) => {
    execFile('curl', all, { maxBuffer: 64 * 1024 * 1024 }, (err, stdout) => {
      if (err !== null) return reject(new Error(`curl ${all.join(' ')} failed: ${err.message}`));
      const cut = stdout.indexOf('\r\n\r\n');
      const headers = stdout.slice(0, cut);
      const body = stdout.slice(cut + 4);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(headers)?.[1] ?? 0);
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      resolve({ status, headers, body, json });
    });
  });
}

/** curl with a JSON body. */
export function curlJson(t: HttpTarget, method: string, path: string, body: unknown): Promise<CurlResult> {
  return curl(t, path, ['-X', method, '-H', 'content-type: application/json', '--data-binary', JSON.stringify(body)]);
}

export interface SseEvent {
  id: number | null;
  event: string;
  data: Record<string, unknown>;
}

/**
 * Reads a server-sent event stream with fetch, handing each event to
 * `onEvent` (return false to stop reading and close the connection), after
 * `onOpen` once the stream's headers came. Resolves
 * with the response status once the stream ends or is stopped.
 */
export async function readSse(url: string, init: RequestInit, onEvent: (ev: SseEvent) => boolean | void, onOpen?: () => void): Promise<{ status: number; body: string }> {
  const ac = new AbortController();
  const res = await fetch(url, { ...init, signal: ac.signal });
  if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) return { status: res.status, body: await res.text() };
  onOpen?.();
  let stop = false;
  const parser = createParser({
    onEvent: (m: EventSourceMessage) => {
      if (stop) return;
      const id = m.id === undefined || m.id === '' ? null : Number(m.id);
      if (onEvent({ id, event: m.event ?? 'message', data: JSON.parse(m.data) as Record<string, unknown> }) === false) stop = true;
    },
  });
  const decoder = new TextDecoder();
  const reader = res.body!.getReader();
  try {
    while (!stop) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.feed(decoder.decode(value, { stream: true }));
    }
  } finally {
    if (stop) ac.abort();
    else reader.releaseLock();
  }
  return { status: res.status, body: '' };
}

/** Every event of a stream that ends by itself. */
export async function sseEvents(url: string, init: RequestInit): Promise<{ status: number; events: SseEvent[]; body: string }> {
  const events: SseEvent[] = [];
  const r = await readSse(url, init, (ev) => void events.push(ev));
  return { status: r.status, events, body: r.body };
}

export function bearer(t: HttpTarget): Record<string, string> {
  return { authorization: `Bearer ${t.token}` };
}
