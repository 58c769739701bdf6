/**
 * The server is bound to the wire contract at compile time: a handler's
 * reply must be its operation's ReplyOf, and its arguments can be read only
 * by the fields the contract declares. Each `@ts-expect-error` below fails
 * typecheck (`npm run typecheck`) if the mistake under it ever compiles.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { op, type OpSpec } from '../../src/main/ops/op-table.ts';
import { OpArgs } from '../../src/main/ops/op-args.ts';
import { replyBody, streamBody, type ReplyBody } from '../../src/shared/wire/frames.ts';
import type { ReplyOf, SubscriptionInfo } from '../../src/shared/wire/ops.ts';
import type { SubscriptionInfo as BusSubscription } from '../../src/main/bus/event-bus.ts';
import type { SubscriptionRecord } from '../../src/threads/storage/messages.ts';

describe('handlers typed by the wire contract', () => {
  it('accepts a handler whose reply is its operation\'s ReplyOf', () => {
    const spec: OpSpec<'get_skill'> = op(() => ({ name: 'a', body: 'b' }));
    expectTypeOf(spec.handler).returns.toExtend<ReplyOf<'get_skill'> | Promise<ReplyOf<'get_skill'>> | symbol>();
    expect(spec.duringShutdown).toBe(false);
  });

  it('refuses a handler whose reply has the wrong shape', () => {
    // @ts-expect-error `get_skill` answers {name, body}, not {skill}
    const wrongField: OpSpec<'get_skill'> = op(() => ({ skill: 'a' }));
    // @ts-expect-error `list_agents` answers {agents: AgentInfo[]}, not the list itself
    const bareList: OpSpec<'list_agents'> = op(() => []);
    // @ts-expect-error `published` counts fired turns as a number
    const wrongType: OpSpec<'publish_event'> = op(async () => ({ fired: '2' }));
    expect([wrongField, bareList, wrongType]).toHaveLength(3);
  });

  it('reads only the argument fields the contract declares, with their declared type', () => {
    const args = new OpArgs('subscribe_event', { source: 'deploy', target_agent: 'a', once: true });
    expect(args.nonEmptyStr('source')).toBe('deploy');
    expect(args.optBool('once')).toBe(true);
    // @ts-expect-error `subscribe_event` has no field `target`
    expect(() => args.str('target')).toThrow('subscribe_event.target is required');
    // @ts-expect-error `once` is a boolean, not a string
    expect(() => args.str('once')).toThrow('subscribe_event.once must be a string');
  });

  it('builds each frame body from the value the contract declares', () => {
    expect(replyBody('get_skill', { name: 'a', body: 'b' })).toEqual({ skill_body: { name: 'a', body: 'b' } });
    expect(replyBody('ping', {})).toEqual({ pong: {} });
    expect(streamBody('start', { agent: 'a' })).toEqual({ stream: { start: { agent: 'a' } } });
    expectTypeOf(replyBody('list_subscriptions', { subscriptions: [] })).toEqualTypeOf<ReplyBody<'list_subscriptions'>>();
    // @ts-expect-error a `chunk` carries {content}
    streamBody('chunk', { text: 'x' });
  });

  it('declares SubscriptionInfo once: the bus and storage use the wire type', () => {
    expectTypeOf<BusSubscription>().toEqualTypeOf<SubscriptionInfo>();
    expectTypeOf<SubscriptionRecord>().toEqualTypeOf<SubscriptionInfo>();
  });
});
