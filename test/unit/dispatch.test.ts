import { describe, expect, it } from 'vitest';
import { createDispatch, operationNames, type DispatchContext, type Requester } from '../../src/main/dispatch.ts';
import { AgentRegistry } from '../../src/main/agent-registry.ts';
import { EventBus } from '../../src/main/bus/event-bus.ts';
import { ObserverHub } from '../../src/main/bus/observers.ts';
import type { ShardPool } from '../../src/main/hosts/shard-pool.ts';
import type { AgentService } from '../../src/main/agent-service.ts';
import type { SkillCatalogue } from '../../src/main/skills.ts';
import type { McpHub } from '../../src/main/hosts/mcp-hub.ts';
import type { ScheduleEngine } from '../../src/main/schedules/schedule-engine.ts';
import type { ConfigReloader } from '../../src/main/reload.ts';
import type { WebhookHub } from '../../src/main/webhooks/webhook-hub.ts';
import { TokenService } from '../../src/main/auth/token-service.ts';
import { validateAgentConfig } from '../../src/shared/config-checks.ts';
import { createLogger } from '../../src/shared/log.ts';
import { TurnRates } from '../../src/main/dashboard/turn-rates.ts';
import type { ToShard } from '../../src/shared/threads/shard-messages.ts';

/** A dispatch over fakes: the pool records what it was asked to route; replies are collected. */
function harness() {
  const routed: [ToShard, string][] = [];
  const route = (msg: ToShard, kind: string) => routed.push([msg, kind]);
  const pool = { count: 2, requestFor: route, requestTurn: route, activeConversations: async () => [], stats: () => ({}) };
  const agents = new AgentRegistry({ assistant: validateAgentConfig({}, 'test', 'assistant') }, 'assistant');
  const state = { closing: false };
  const ctx: DispatchContext = {
    pool: pool as unknown as ShardPool,
    storage: null,
    bus: new EventBus({ storage: null, log: createLogger('silent'), fire: () => true }),
    observers: new ObserverHub(() => {}),
    agentService: {} as AgentService,
    skills: {} as SkillCatalogue,
    agents,
    mcp: {} as McpHub,
    defaultSender: 'user',
    startedAt: Date.now(),
    connections: () => 1,
    transportStats: () => ({ connections_by_listener: { unix: 0, tcp: 0, http: 0 }, refused_connections: { unix: 0, tcp: 0, http: 0 }, unauthenticated_connections: 0, unauthenticated_evicted: 0 }),
    limits: {},
    reloader: {} as ConfigReloader,
    closing: () => state.closing,
    clusterStats: () => null,
    drain: null,
    schedules: {} as ScheduleEngine,
    webhooks: {} as WebhookHub,
    webhookHosts: [],
    tokens: new TokenService({ storage: null, log: createLogger('silent'), live: () => [] }),
    dashboard: { rates: new TurnRates(null), perShard: () => ({ running: [0, 0], queued: [0, 0] }) },
  };
  const replies: [number, any][] = [];
  const from: Requester = { id: 42, reply: (req, value) => replies.push([req, value]), backlog: () => 0, write: () => {} };
  const dispatch = createDispatch(ctx);
  return { send: (req: number, body: Record<string, unknown>) => dispatch(from, req, body), replies, routed, state };
}

describe('dispatch', () => {
  it('answers ping on main', () => {
    const h = harness();
    h.send(1, { ping: {} });
    expect(h.replies).toEqual([[1, { pong: {} }]]);
  });

  it('refuses a body without exactly one known operation, and an argument that is not a map', () => {
    const h = harness();
    h.send(1, {});
    h.send(2, { ping: {}, get_stats: {} });
    h.send(3, { nope: {} });
    h.send(4, { ping: 1 });
    expect(h.replies.map(([req, v]) => [req, v.error.code, v.error.message])).toEqual([
      [1, 400, 'a request holds exactly one operation; got no operation'],
      [2, 400, 'a request holds exactly one operation; got 2 operations (ping, get_stats)'],
      [3, 400, 'unknown operation "nope"'],
      [4, 400, 'the argument of "ping" must be a map'],
    ]);
  });

  it('routes a stream to the pair\'s shard as one turn request, with defaults filled in', () => {
    const h = harness();
    h.send(7, { stream: { agent: 'assistant', content: 'hi' } });
    expect(h.replies).toEqual([]);
    expect(h.routed).toEqual([
      [
        {
          type: 'turn', conn: 42, req: 7, mode: 'stream', agent: 'assistant', sender: 'user', content: 'hi',
          guest: null, ephemeral: false, correlationId: null, onBusy: 'enqueue', toolChoice: null, depth: 0, seq: 0, turnId: null, chain: 0, detach: false,
        },
        'stream',
      ],
    ]);
  });

  it('names the operation and the field in a 400, and 404s an unknown agent', async () => {
    const h = harness();
    h.send(1, { send: { agent: 'assistant' } });
    h.send(2, { stream: { agent: 'nobody', content: 'x' } });
    h.send(3, { stream: { agent: 'assistant', content: 'x', on_busy: 'later' } });
    h.send(4, { unsubscribe_event: {} }); // an async handler: its refusal is a rejected promise
    await new Promise((r) => setImmediate(r));
    expect(h.replies.map(([, v]) => [v.error.code, v.error.message])).toEqual([
      [400, 'send.content is required'],
      [404, 'unknown agent "nobody"'],
      [400, 'stream.on_busy must be one of "enqueue", "reject", "interrupt"'],
      [400, 'unsubscribe_event.id is required'],
    ]);
    expect(h.routed).toEqual([]);
  });

  it('refuses new work with 503 once shutting down, but still answers ping and get_stats', async () => {
    const h = harness();
    h.state.closing = true;
    h.send(1, { send: { agent: 'assistant', content: 'x' } });
    h.send(2, { ping: {} });
    h.send(3, { get_stats: {} });
    await new Promise((r) => setImmediate(r));
    expect(h.replies.map(([req, v]) => [req, Object.keys(v)[0], v.error?.code])).toEqual([
      [1, 'error', 503],
      [2, 'pong', undefined],
      [3, 'stats', undefined],
    ]);
  });

  it('lists every operation it serves, once each', () => {
    const names = operationNames();
    expect(new Set(names).size).toBe(names.length);
    expect(names.length).toBe(53);
    for (const n of ['list_mcps', 'upsert_mcp', 'delete_mcp', 'reconnect_mcp', 'subscribe_mcp_events', 'ping', 'stream', 'send', 'kill', 'compact', 'publish_event', 'create_agent', 'get_skill', 'get_stats', 'get_dashboard', 'create_schedule', 'list_schedules', 'delete_schedule', 'get_run', 'list_runs', 'join_run', 'steer', 'approve_tool', 'reload_config', 'drain', 'rename_agent', 'export_conversations', 'import_messages', 'create_token', 'list_tokens', 'revoke_token']) expect(names).toContain(n);
  });
});
