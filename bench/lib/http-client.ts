/**
 * A minimal HTTP/1.1 keep-alive client for the load generator: one
 * connection, one request at a time (HTTP/1.1 has no multiplexing; clients
 * run several for concurrency), the body read whole and not parsed, so it
 * costs the same against agentd and against the HTTP floor.
 */
import { Agent, request } from 'node:http';
import type { BenchClient } from './clients.ts';

export interface HttpCall {
  method: string;
  /** The path of the i-th request. */
  path: (i: number) => string;
  /** The JSON body of the i-th request, or null for none. */
  body: ((i: number) => unknown) | null;
}

/** One keep-alive connection to `base` sending `call`, in the BenchClient shape. */
export function httpClient(base: string, call: HttpCall, headers: Record<string, string> = {}): BenchClient {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const url = new URL(base);
  let i = 0;
  const send = (): Promise<{ sent: bigint; first: bigint; last: bigint }> =>
    new Promise((resolve, reject) => {
      const n = i++;
      const payload = call.body === null ? null : Buffer.from(JSON.stringify(call.body(n)));
      const path = call.path(n);
      const sent = process.hrtime.bigint();
      const req = request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          method: call.method,
          path,
          headers: { ...headers, ...(payload === null ? {} : { 'content-type': 'application/json', 'content-length': payload.length }) },
        },
        (res) => {
          let first = 0n;
          res.on('data', () => {
            if (first === 0n) first = process.hrtime.bigint();
          });
          res.on('end', () => {
            if (res.statusCode !== 200) return reject(new Error(`${call.method} ${path}: HTTP ${res.statusCode}`));
            const last = process.hrtime.bigint();
            resolve({ sent, first: first === 0n ? last : first, last });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(payload ?? undefined);
    });
  return {
    call: async () => {
      await send();
    },
    timed: send,
    close: () => agent.destroy(),
  };
}
