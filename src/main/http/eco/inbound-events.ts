/**
 * Inbound webhooks (`POST /v1/events/{source}`): docs/http-ecosystem.md.
 * The body, as it came, is the payload of a `publish_event` with the path's
 * source (PROTOCOL §4.5). The route is served without the door's bearer
 * check, because a webhook sender signs instead: a request is let in by
 * either a token that may publish (`Authorization: Bearer`: the home's, or a
 * scoped one with `chat`, not bound), or an
 * `X-Agentd-Signature: sha256=<hex>` header (GitHub's
 * `X-Hub-Signature-256` too) holding the HMAC-SHA256 of the body under the
 * source's secret (`http_event_sources`), compared in constant time. Any
 * other request gets 401 and nothing is published.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { AgentdError, Code } from '../../../shared/errors.ts';
import type { Logger } from '../../../shared/log.ts';
import type { Authenticate } from '../../auth/principal.ts';
import { authorize } from '../../auth/authorize.ts';
import { readBody, sendError, sendJson } from '../http-io.ts';
import { fromThisMachine } from '../../net/same-machine.ts';
import type { HttpRoute } from '../router.ts';

export interface InboundEventsOptions {
  /** Source → its signing secret. */
  sources: Readonly<Record<string, { readonly secret: string }>>;
  /** The door's token check; null: no token (loopback only), every request is let in. */
  authenticate: Authenticate | null;
  maxBodyBytes: number;
  log: Logger | null;
}

const SIGNATURE_HEADERS = ['x-agentd-signature', 'x-hub-signature-256'] as const;

function signatureOf(req: IncomingMessage): string | null {
  for (const name of SIGNATURE_HEADERS) {
    const v = req.headers[name];
    if (typeof v === 'string') return v;
  }
  return null;
}

/** Whether `header` is `sha256=<hex>` of the body's HMAC under `secret`, compared in constant time. */
export function signatureMatches(header: string, secret: string, body: Buffer): boolean {
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim());
  if (m === null) return false;
  const expected = createHmac('sha256', secret).update(body).digest();
  return timingSafeEqual(Buffer.from(m[1]!, 'hex'), expected);
}

function unauthorized(message: string): AgentdError {
  return new AgentdError(Code.Unauthorized, message);
}

/** Lets the request in by its token (before its body is read) or by its signature (after): the body, or 401 thrown. */
async function admittedBody(req: IncomingMessage, source: string, o: InboundEventsOptions): Promise<Buffer> {
  const signature = signatureOf(req);
  if (signature === null) {
    if (o.authenticate === null && !fromThisMachine(req)) throw unauthorized('without a token this door serves requests to a loopback Host from no other Origin');
    if (o.authenticate !== null) {
      const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(req.headers.authorization ?? '');
      if (m === null) throw unauthorized('authentication required: send Authorization: Bearer <token>, or sign the body (X-Agentd-Signature: sha256=<hex HMAC-SHA256>)');
      const principal = await o.authenticate(m[1]!);
      if (principal === null) throw unauthorized('wrong token');
      // The route is public, so its call runs unchecked: the token is held to publish_event's scope here (403).
      authorize(principal, 'publish_event', { source });
    }
    return readBody(req, o.maxBodyBytes);
  }
  const secret = o.sources[source]?.secret;
  if (secret === undefined) throw unauthorized(`source "${source}" has no secret in http_event_sources: a signed request cannot be checked`);
  const body = await readBody(req, o.maxBodyBytes);
  if (!signatureMatches(signature, secret, body)) {
    o.log?.warn({ source }, 'inbound event refused: bad signature');
    throw unauthorized('bad signature: expected sha256=<hex HMAC-SHA256 of the body under the source\'s secret>');
  }
  return body;
}

export function inboundEventsRoute(o: InboundEventsOptions): HttpRoute {
  return {
    method: 'POST',
    path: '/v1/events/{source}',
    tag: 'bus',
    op: 'publish_event',
    summary: 'Inbound webhook: publish the body on the bus as the source\'s event (a token, or an HMAC signature with the source\'s secret)',
    public: true,
    handler: async (req, res, x) => {
      const source = x.params.source!;
      let body: Buffer;
      try {
        body = await admittedBody(req, source, o);
      } catch (err) {
        // Refused, maybe with its body unread: the connection is not reused.
        return sendError(res, err, true);
      }
      const published = (await x.call('publish_event', { source, payload: body.toString('utf8') })) as { fired: number };
      sendJson(res, 200, published);
    },
  };
}
