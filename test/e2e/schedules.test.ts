/** Schedules: time as an event source for the bus (PROTOCOL §4.11), on one daemon. */
import { describe, expect, it } from 'vitest';
import type { AgentdClient } from '../../src/client/index.ts';
import type { ScheduleInfo } from '../../src/shared/wire/schedules.ts';
import { startDaemon, testClient, testDaemon, waitFor, cleanup, makeHome, type Daemon } from '../helpers/daemon.ts';

const CONFIG = { agents: { assistant: { model: 'echo' } } };

async function schedules(c: AgentdClient): Promise<ScheduleInfo[]> {
  return ((await c.request('list_schedules', {})).schedule_list as { schedules: ScheduleInfo[] }).schedules;
}

async function create(c: AgentdClient, args: Record<string, unknown>): Promise<ScheduleInfo> {
  return (await c.request('create_schedule', args as never)).schedule as ScheduleInfo;
}

/** The user messages of the bus's conversation for `source`, in order. */
async function userMessages(c: AgentdClient, source: string): Promise<string[]> {
  const h = await c.request('get_conversation_history', { agent: 'assistant', sender: `event:${source}` }).catch(() => null);
  if (h === null) return [];
  const messages = (h.conversation_history as { messages: { role: string; content: string }[] }).messages;
  return messages.filter((m) => m.role === 'user').map((m) => m.content);
}

/**
 * Every turn fired on `source` so far has ended: a sentinel published after them queues behind them on the
 * same conversation, so once it is in the history, so is every earlier one.
 */
async function settled(c: AgentdClient, source: string): Promise<string[]> {
  const sentinel = `sentinel-${Math.random()}`;
  expect((await c.request('publish_event', { source, payload: sentinel })).published).toEqual({ fired: 1 });
  await waitFor(async () => (await userMessages(c, source)).includes(sentinel), 'the sentinel turn', 30_000);
  return (await userMessages(c, source)).filter((m) => m !== sentinel);
}

describe('schedules', () => {
  it('an every_ms 1000 schedule fires about once a second into the subscribed agent turns', async () => {
    const d = await testDaemon({ config: CONFIG });
    const c = await testClient(d);
    await c.subscribe('tick', 'assistant');
    const s = await create(c, { name: 'ticker', source: 'tick', payload: 'tick', every_ms: 1000 });
    expect(s).toMatchObject({ name: 'ticker', source: 'tick', payload: 'tick', every_ms: 1000, cron: null, at: null, catch_up: 'none', fires: 0 });
    const created = Date.parse(s.created_at);
    expect(Date.parse(s.next_at!)).toBe(created + 1000);
    // Ten seconds on, half-way between two ticks (none is being fired), count and stop it.
    await waitFor(() => Date.now() >= created + 10_500, 'ten ticks', 20_000);
    const [before] = await schedules(c);
    await c.request('delete_schedule', { name: 'ticker' });
    const elapsedTicks = Math.floor((Date.now() - created) / 1000);
    expect(Math.abs(before!.fires - elapsedTicks)).toBeLessThanOrEqual(1);
    expect(await schedules(c)).toEqual([]);
    // Each recorded tick started exactly one turn.
    const turns = await settled(c, 'tick');
    expect(turns.every((t) => t === 'tick')).toBe(true);
    expect(turns.length).toBe(before!.fires);
  }, 60_000);

  it('a one-shot (at) fires once and is gone; a cron schedule takes seconds and a time zone', async () => {
    const d = await testDaemon({ config: CONFIG });
    const c = await testClient(d);
    await c.subscribe('once', 'assistant');
    await c.subscribe('cron', 'assistant');
    const at = new Date(Date.now() + 1500).toISOString();
    expect(await create(c, { name: 'one-shot', source: 'once', payload: { n: 1 }, at })).toMatchObject({ at, next_at: at, every_ms: null, payload: { n: 1 } });
    const cron = await create(c, { name: 'every-second', source: 'cron', payload: 'c', cron: '* * * * * *', timezone: 'Europe/Berlin' });
    expect(cron).toMatchObject({ cron: '* * * * * *', timezone: 'Europe/Berlin' });
    await waitFor(async () => (await schedules(c)).every((s) => s.name !== 'one-shot'), 'the one-shot to fire', 20_000);
    await waitFor(async () => ((await schedules(c))[0]?.fires ?? 0) >= 2, 'two cron ticks', 20_000);
    expect(await settled(c, 'once')).toEqual(['{"n":1}']);
  }, 60_000);

  it('survives a restart; a tick missed while stopped fires once with catch_up "one", never with "none"', async () => {
    const home = makeHome(CONFIG);
    let d: Daemon = await startDaemon({ home });
    let c = await testClient(d);
    await c.subscribe('missed', 'assistant');
    const at = Date.now() + 2000;
    await create(c, { name: 'late-one', source: 'missed', payload: 'caught up', at: new Date(at).toISOString(), catch_up: 'one' });
    await create(c, { name: 'late-none', source: 'missed', payload: 'skipped', at: new Date(at).toISOString() });
    const kept = await create(c, { name: 'hourly', source: 'missed', payload: 'later', every_ms: 3_600_000, catch_up: 'one' });
    await d.stop();
    await waitFor(() => Date.now() > at + 200, 'the ticks to pass while the daemon is down');
    d = await startDaemon({ home });
    try {
      c = await testClient(d);
      await waitFor(async () => (await schedules(c)).length === 1, 'the missed one-shots to be settled');
      expect(await schedules(c)).toEqual([kept]);
      expect(await settled(c, 'missed')).toEqual(['caught up']);
    } finally {
      await cleanup(d);
    }
  }, 90_000);

  it('refuses bad schedules with 400, a taken name with 409, one past max_schedules with 429, an unknown one with 404', async () => {
    const d = await testDaemon({ config: { ...CONFIG, max_schedules: 2 } });
    const c = await testClient(d);
    const base = { name: 's', source: 'src' };
    const refused = async (args: Record<string, unknown>, code: number, message: RegExp): Promise<void> => {
      const r = create(c, { ...base, ...args });
      await expect(r).rejects.toMatchObject({ code });
      await expect(r).rejects.toThrow(message);
    };
    await refused({}, 400, /create_schedule needs exactly one of cron, every_ms, at; got none/);
    await refused({ cron: '* * * * *', every_ms: 1000 }, 400, /exactly one of cron, every_ms, at; got cron and every_ms/);
    await refused({ every_ms: 999 }, 400, /create_schedule.every_ms must be from 1000 \(one second\)/);
    await refused({ every_ms: 'x' }, 400, /create_schedule.every_ms must be a non-negative integer/);
    await refused({ cron: '61 * * * *' }, 400, /create_schedule.cron "61 \* \* \* \*" is not a valid cron expression/);
    await refused({ cron: '* * * *' }, 400, /cron must have 5 fields .* or 6 .*, got 4/);
    await refused({ cron: '* * * * *', timezone: 'Mars/Olympus' }, 400, /timezone "Mars\/Olympus" is not an IANA time zone/);
    await refused({ every_ms: 1000, timezone: 'UTC' }, 400, /timezone applies to cron schedules only/);
    await refused({ at: '2020-01-01T00:00:00Z' }, 400, /create_schedule.at 2020-01-01T00:00:00Z is in the past/);
    await refused({ at: 'tomorrow' }, 400, /create_schedule.at must be an RFC 3339 time/);
    await refused({ every_ms: 1000, catch_up: 'all' }, 400, /create_schedule.catch_up must be one of "none", "one"/);
    await refused({ every_ms: 1000, name: '-x' }, 400, /create_schedule.name must be 1-128 letters/);
    await refused({ every_ms: 1000, source: '' }, 400, /create_schedule.source must not be empty/);
    await create(c, { ...base, every_ms: 60_000 });
    await refused({ every_ms: 60_000 }, 409, /schedule "s" already exists/);
    await create(c, { ...base, name: 't', every_ms: 60_000 });
    await refused({ name: 'u', every_ms: 60_000 }, 429, /too many schedules: the limit is 2 \(config key max_schedules\)/);
    expect((await schedules(c)).map((s) => s.name)).toEqual(['s', 't']);
    const missing = c.request('delete_schedule', { name: 'nope' });
    await expect(missing).rejects.toMatchObject({ code: 404 });
    await expect(missing).rejects.toThrow(/no schedule "nope"/);
    await c.request('delete_schedule', { name: 's' });
    await create(c, { ...base, name: 'u', every_ms: 60_000 });
    expect(await c.stats()).toMatchObject({ limits: { max_schedules: 2 } });
  });
});
