/**
 * Starts the HTTP door (`http`): builds the route table (the REST API and the
 * OpenAPI document; other route sets mount here too) and listens. Requests
 * authenticate as TCP's do: the home's token or a scoped one; without a
 * token (`--tcp-insecure`) HTTP serves loopback addresses only.
 */
import { join } from 'node:path';
import type { ResolvedConfig } from '../../shared/config.ts';
import type { Logger } from '../../shared/log.ts';
import type { Authenticate } from '../auth/principal.ts';
import type { ConnectionLimiter } from '../net/connection-limit.ts';
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
  /** Resolves a bearer token to a principal; null: no token is configured (loopback only, every request the admin). */
  authenticate: Authenticate | null;
  log: Logger;
  host: RequesterHost;
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

export function startHttp(config: ResolvedConfig, parts: HttpParts): Promise<HttpListener> {
  return listenHttp({
    addr: config.http!,
    authenticate: parts.authenticate,
    router: buildRouter({ httpEventSources: config.httpEventSources, authenticate: parts.authenticate, maxBodyBytes: config.maxBodyBytes, log: parts.log }),
    limiter: parts.limiter,
    host: parts.host,
    dispatch: parts.dispatch,
    maxBodyBytes: config.maxBodyBytes,
    authTimeoutMs: config.authTimeoutMs,
    portFile: join(config.home, 'run', 'http.port'),
    log: parts.log,
  });
}
