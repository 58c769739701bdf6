import { describe, expect, it } from 'vitest';
import { EventBus, MAX_FIRE_DEPTH } from '../../src/main/bus/event-bus.ts';
import type { SubscriptionInfo } from '../../src/shared/wire/ops.ts';
import { createLogger } from '../../src/shared/log.ts';

function bus(stored: SubscriptionInfo[] = [], refuse: string[] = []) {
  const fired: [string, string, number][] = [];
  const b = new EventBus(
    {
      storage: null,
      log: createLogger('silent'),
      fire: (sub, payload, depth) => {
        if (refuse.includes(sub.target_agent)) return false;
        fired.push([sub.target_agent, payload, depth]);
        return true;
      },
    },
    stored,
  );
  return { b, fired };
}

describe('EventBus', () => {
  it('fires every subscription of the exact source, one level deeper', async () => {
    const { b, fired } = bus();
    await b.subscribe('deploy.done', 'a', false);
    await b.subscribe('deploy.done', 'b', false);
    await b.subscribe('deploy', 'c', false);
    expect(await b.publish('deploy.done', 'v42', 0)).toBe(2);
    expect(fired).toEqual([['a', 'v42', 1], ['b', 'v42', 1]]);
    expect(await b.publish('nothing', 'x', 0)).toBe(0);
  });

  it('a once subscription fires once and is gone', async () => {
    const { b, fired } = bus();
    const once = await b.subscribe('s', 'a', true);
    expect(await b.publish('s', 'p', 0)).toBe(1);
    expect(await b.publish('s', 'p', 0)).toBe(0);
    expect(fired).toHaveLength(1);
    expect(b.list().map((s) => s.id)).not.toContain(once.id);
  });

  it('does not count a subscription whose agent is gone', async () => {
    const { b } = bus([], ['gone']);
    await b.subscribe('s', 'gone', false);
    await b.subscribe('s', 'here', false);
    expect(await b.publish('s', 'p', 0)).toBe(1);
  });

  it('cuts a chain deeper than the limit', async () => {
    const { b, fired } = bus();
    await b.subscribe('s', 'a', false);
    expect(await b.publish('s', 'p', MAX_FIRE_DEPTH - 1)).toBe(1);
    expect(await b.publish('s', 'p', MAX_FIRE_DEPTH)).toBe(0);
    expect(fired).toEqual([['a', 'p', MAX_FIRE_DEPTH]]);
  });

  it('starts from stored subscriptions, numbers new ones after them, and forgets a removed agent', async () => {
    const { b } = bus([{ id: 7, source: 's', target_agent: 'a', once: false }]);
    expect((await b.subscribe('t', 'b', false)).id).toBe(8);
    expect(b.size).toBe(2);
    await b.removeAgent('a');
    expect(b.list()).toEqual([{ id: 8, source: 't', target_agent: 'b', once: false }]);
    expect(await b.unsubscribe(8)).toBe(true);
    expect(await b.unsubscribe(8)).toBe(false);
    expect(b.size).toBe(0);
  });

  it('refuses a subscription past max_subscriptions (429); a fired once subscription frees its slot', async () => {
    const b = new EventBus({ storage: null, log: createLogger('silent'), fire: () => true, maxSubscriptions: 2 });
    await b.subscribe('s', 'a', true);
    await b.subscribe('t', 'a', false);
    await expect(b.subscribe('u', 'a', false)).rejects.toMatchObject({ code: 429, message: 'too many subscriptions: the limit is 2 (config key max_subscriptions)' });
    expect(b.size).toBe(2);
    await b.publish('s', 'p', 0);
    await b.subscribe('u', 'a', false);
    expect(b.list().map((s) => s.source)).toEqual(['t', 'u']);
  });
});

describe('EventBus: which agents’ done events are listened for', () => {
  function watchedBus(stored: SubscriptionInfo[] = []) {
    const told: string[][] = [];
    const b = new EventBus({ storage: null, log: createLogger('silent'), fire: () => true, doneWatchChanged: (agents) => told.push([...agents].sort()) }, stored);
    return { b, told };
  }

  it('tells the set when a done source gets its first subscriber or loses its last, before subscribe or unsubscribe returns', async () => {
    const { b, told } = watchedBus();
    const first = await b.subscribe('agent:alpha:done', 'x', false);
    expect(told).toEqual([['alpha']]);
    await b.subscribe('agent:alpha:done', 'y', false); // not the first: no change
    await b.subscribe('deploy.done', 'x', false); // not a done source
    await b.subscribe('agent:beta:done', 'x', true);
    expect(told).toEqual([['alpha'], ['alpha', 'beta']]);
    await b.unsubscribe(first.id);
    expect(told).toHaveLength(2); // alpha still has a subscriber
    await b.publish('agent:beta:done', 'text', 0); // the once subscription goes
    expect(told.at(-1)).toEqual(['alpha']);
    expect(b.doneAgents()).toEqual(['alpha']);
  });

  it('tells once for a whole table replaced at once, and counts stored subscriptions from the start', async () => {
    const { b, told } = watchedBus([{ id: 1, source: 'agent:a:done', target_agent: 'x', once: false }]);
    expect(b.doneAgents()).toEqual(['a']);
    await Promise.resolve();
    told.length = 0;
    b.replace(Array.from({ length: 50 }, (_, i) => ({ id: i + 10, source: `agent:n${i % 5}:done`, target_agent: 'x', once: false })));
    await Promise.resolve();
    expect(told).toEqual([['n0', 'n1', 'n2', 'n3', 'n4']]);
  });
});

describe('EventBus in cluster mode', () => {
  it('a reload that lands while a subscribe awaits its insert does not leave the subscription twice', async () => {
    const fired: string[] = [];
    let replaceDuringInsert: (() => void) | null = null;
    const storage = {
      run: async (task: { op: string }) => {
        if (task.op !== 'subscription_insert') return 0;
        replaceDuringInsert?.(); // another node's change: the table is reloaded with the row just inserted
        return 7;
      },
    };
    const b = new EventBus({ storage: storage as never, log: createLogger('silent'), fire: (sub) => fired.push(sub.target_agent) > 0, cluster: { changed: () => {} } });
    replaceDuringInsert = () => b.replace([{ id: 7, source: 'kick', target_agent: 'x', once: false }]);
    await b.subscribe('kick', 'x', false);
    expect(b.list()).toHaveLength(1);
    expect(await b.publish('kick', 'go', 0)).toBe(1);
    expect(fired).toEqual(['x']);
  });

  it('names each fired turn by the publish key and the subscription, so a second publish of the key replays', async () => {
    const ids: (string | null)[] = [];
    const b = new EventBus({ storage: null, log: createLogger('silent'), fire: (_sub, _payload, _depth, _chain, turnId) => (ids.push(turnId), true) }, []);
    const a = await b.subscribe('tick', 'a', false);
    const c = await b.subscribe('tick', 'c', false);
    await b.publish('tick', 'p', 0, 0, 'tick:abc');
    await b.publish('tick', 'p', 0, 0, 'tick:abc');
    await b.publish('tick', 'p', 0);
    expect(ids).toEqual([`tick:abc:${a.id}`, `tick:abc:${c.id}`, `tick:abc:${a.id}`, `tick:abc:${c.id}`, null, null]);
  });
});

