/**
 * Starts the HTTP door (`http`): builds the route table (the REST API and the
 * OpenAPI document; other route sets mount here too) and listens. Requests
 * authenticate with the home's token, the same one TCP asks for; without a
 * token (`--tcp-insecure`) HTTP serves loopback addresses only.
 */
import { join } from 'node:path';
import type { ResolvedConfig } from '../../shared/config.ts';
import type { Logger } from '../../shared/log.ts';
import { ADMIN, type Authenticate } from '../auth/principal.ts';
import type { ConnectionLimiter } from '../net/connection-limit.ts';
import { sameSecret } from '../net/token.ts';
import type { Dispatch } from '../dispatch.ts';
import { listenHttp, type HttpListener } from './http-listener.ts';
import type { RequesterHost } from './http-requester.ts';
import { HttpRouter } from './router.ts';
import { mountRest } from './routes.ts';
import { openApiRoute } from './openapi.ts';
import { mountEcosystem } from './eco/index.ts';

export type { HttpListener } from './http-listener.ts';

/** What the HTTP door needs of the daemon. */
export interface HttpParts {
  dispatch: Dispatch;
  limiter: ConnectionLimiter;
  /** The TCP token in force (configured or from the token file); null without one. */
  connectionLimits: { token: string | null };
  log: Logger;
  host: RequesterHost;
}

/** The home token as the admin; another token is unknown. */
export function homeTokenAuth(token: string): Authenticate {
  return (presented) => Promise.resolve(sameSecret(presented, token) ? ADMIN : null);
}

/** What routes need of the daemon beyond dispatch: the inbound webhooks check tokens and signatures themselves. */
export interface RouterContext {
  httpEventSources: ResolvedConfig['httpEventSources'];
  authenticate: Authenticate | null;
  maxBodyBytes: number;
  log: Logger | null;
}

const NO_CONTEXT: RouterContext = { httpEventSources: {}, authenticate: null, maxBodyBytes: 16 * 1024 * 1024, log: null };

/** Every route the HTTP door serves. */
export function buildRouter(ctx: RouterContext = NO_CONTEXT): HttpRouter {
  const router = new HttpRouter();
  mountRest(router);
  mountEcosystem(router, { sources: ctx.httpEventSources, authenticate: ctx.authenticate, maxBodyBytes: ctx.maxBodyBytes, log: ctx.log });
  router.mount(openApiRoute(router));
  return router;
}

export function startHttp(config: ResolvedConfig, parts: HttpParts, authenticate?: Authenticate): Promise<HttpListener> {
  const token = parts.connectionLimits.token;
  const auth = authenticate ?? (token === null ? null : homeTokenAuth(token));
  return listenHttp({
    addr: config.http!,
    authenticate: auth,
    router: buildRouter({ httpEventSources: config.httpEventSources, authenticate: auth, maxBodyBytes: config.maxBodyBytes, log: parts.log }),
    limiter: parts.limiter,
    host: parts.host,
    dispatch: parts.dispatch,
    maxBodyBytes: config.maxBodyBytes,
    authTimeoutMs: config.authTimeoutMs,
    portFile: join(config.home, 'run', 'http.port'),
    log: parts.log,
  });
}
