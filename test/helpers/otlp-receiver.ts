/**
 * A small OTLP/HTTP receiver: takes what the official JSON exporter posts
 * to /v1/traces, decodes it, and keeps every span with its resource.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  start: bigint;
  end: bigint;
  attributes: Record<string, string | number | boolean>;
  status: { code?: number; message?: string };
  resource: Record<string, string | number | boolean>;
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  /** Requests that were not OTLP JSON at /v1/traces. */
  rejected: number;
  close(): Promise<void>;
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type KeyValue = { key: string; value: AnyValue };

function attrs(list: KeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) out[key] = value.stringValue ?? value.boolValue ?? value.doubleValue ?? Number(value.intValue);
  return out;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const state: OtlpReceiver = { url: '', spans: [], rejected: 0, close: async () => {} };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !String(req.headers['content-type']).startsWith('application/json')) {
        state.rejected++;
        res.writeHead(415).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans: { resource?: { attributes?: KeyValue[] }; scopeSpans: { spans: Record<string, any>[] }[] }[] };
      for (const rs of body.resourceSpans) {
        const resource = attrs(rs.resource?.attributes);
        for (const ss of rs.scopeSpans) {
          for (const s of ss.spans) {
            state.spans.push({
              traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId ?? '', name: s.name, kind: s.kind,
              start: BigInt(s.startTimeUnixNano), end: BigInt(s.endTimeUnixNano), attributes: attrs(s.attributes), status: s.status ?? {}, resource,
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`;
  state.close = () => new Promise((r) => server.close(() => r()));
  return state;
}
