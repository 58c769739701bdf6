/**
 * The ecosystem's protocols on the HTTP door (docs/http-ecosystem.md):
 * OpenAI-compatible chat completions, responses and models, the MCP server,
 * A2A, and inbound webhooks onto the event bus.
 */
import type { HttpRouter } from '../router.ts';
import { inboundEventsRoute, type InboundEventsOptions } from './inbound-events.ts';
import { a2aRoutes } from './a2a.ts';
import { mcpRoutes } from './mcp-routes.ts';
import { responsesRoute } from './openai-responses.ts';
import { chatCompletionsRoute, modelRoute, modelsRoute } from './openai-chat.ts';

/** Mounts the ecosystem routes; `GET /v1/models` takes the REST route's place (the agents, as OpenAI lists models). */
export function mountEcosystem(router: HttpRouter, events: InboundEventsOptions): void {
  router.mount(chatCompletionsRoute());
  router.replace(modelsRoute());
  router.mount(modelRoute());
  router.mount(responsesRoute());
  for (const r of mcpRoutes()) router.mount(r);
  for (const r of a2aRoutes()) router.mount(r);
  router.mount(inboundEventsRoute(events));
}
