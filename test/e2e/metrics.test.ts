/** Prometheus metrics: off by default; turns, connections, stalls and the process counted; the token off loopback. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { shardOf } from '../../src/shared/hash.ts';
import { cleanup, collect, startDaemon, testClient, type Daemon } from '../helpers/daemon.ts';

let d: Daemon;
beforeAll(async () => {
  d = await startDaemon({
    workers: 2,
    args: ['--metrics', '127.0.0.1:0'],
    config: {
      providers: { nowhere: { type: 'openai', base_url: 'http://127.0.0.1:9/v1' } },
      agents: { assistant: { model: 'echo' }, broken: { model: 'gpt-nothing', provider: 'nowhere' } },
    },
  });
});
afterAll(() => cleanup(d));

const metricsUrl = (home: string): string => `http://127.0.0.1:${readFileSync(join(home, 'run', 'metrics.port'), 'utf8').trim()}/metrics`;

/** The value of one sample line, or undefined when it is absent. */
function sample(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('metrics', () => {
  it('counts turns by agent and outcome, their latency, connections and the process', async () => {
    const c = await testClient(d);
    for (let i = 0; i < 3; i++) await collect(c.stream('assistant', 'hello there', { sender: `m${i}` }));
    await collect(c.stream('broken', 'hello', { sender: 'm' }));
    const res = await fetch(metricsUrl(d.home));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const text = await res.text();
    expect(sample(text, 'agentd_turns_total', '{agent="assistant",outcome="text"}')).toBe(3);
    expect(sample(text, 'agentd_turns_total', '{agent="broken",outcome="error"}')).toBe(1);
    expect(sample(text, 'agentd_turn_duration_seconds_count')).toBe(4);
    expect(sample(text, 'agentd_turn_start_seconds_count')).toBe(4);
    expect(sample(text, 'agentd_turn_duration_seconds_bucket', '{le="+Inf"}')).toBe(4);
    expect(sample(text, 'agentd_connections', '{listener="unix"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'agentd_conversations_in_memory')).toBe(4);
    expect(sample(text, 'agentd_agents')).toBe(2);
    expect(sample(text, 'agentd_turns', '{shard="0",state="running"}')).toBe(0);
    expect(sample(text, 'agentd_sqlite_wal_bytes')).toBeGreaterThan(0);
    expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(text).toContain('# TYPE agentd_turns_total counter');
    c.close();
  });

  it('answers only GET /metrics', async () => {
    expect((await fetch(metricsUrl(d.home).replace('/metrics', '/other'))).status).toBe(404);
    expect((await fetch(metricsUrl(d.home), { method: 'POST' })).status).toBe(405);
  });

  it('is off by default', async () => {
    const plain = await startDaemon({ workers: 1 });
    onTestFinished(() => cleanup(plain));
    expect(existsSync(join(plain.home, 'run', 'metrics.port'))).toBe(false);
  });

  it('asks for the token off loopback', async () => {
    const open = await startDaemon({ workers: 1, args: ['--metrics', '0.0.0.0:0'] });
    onTestFinished(() => cleanup(open));
    const url = metricsUrl(open.home);
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(url, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const token = readFileSync(join(open.home, 'token'), 'utf8').trim();
    expect((await fetch(url, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
  });

  it('counts a shard stall and the turn lost with it, and a crash apart', async () => {
    const stalling = await startDaemon({
      workers: 2,
      args: ['--metrics', '127.0.0.1:0'],
      env: { AGENTD_TEST_SYNC_BURN: '1', AGENTD_TEST_CRASH_TOKEN: 'crash-now' },
      config: { shard_stall_ms: 500, agents: { burn: { model: 'echo', echo: { cpu_us: 900_000 } } } },
    });
    onTestFinished(() => cleanup(stalling));
    const c = await testClient(stalling);
    onTestFinished(() => c.close());
    let sender = 'b0';
    for (let i = 0; shardOf('burn', sender, 2) !== 0; i++) sender = `b${i}`;
    const evs = await collect(c.stream('burn', 'one two three four five six seven eight nine ten', { sender }));
    expect(evs.at(-1)).toMatchObject({ type: 'end', stop_reason: 'stalled' });
    const text = await (await fetch(metricsUrl(stalling.home))).text();
    expect(sample(text, 'agentd_shard_stalls_total')).toBe(1);
    expect(sample(text, 'agentd_shard_crashes_total')).toBe(0);
    expect(sample(text, 'agentd_turns_total', '{agent="burn",outcome="lost"}')).toBe(1);
    // A crash is counted apart from the stall.
    const crashed = await collect(c.stream('burn', 'crash-now', { sender: 'c' }));
    expect(crashed.at(-1)).toMatchObject({ type: 'end', stop_reason: 'error' });
    const after = await (await fetch(metricsUrl(stalling.home))).text();
    expect(sample(after, 'agentd_shard_crashes_total')).toBe(1);
    expect(sample(after, 'agentd_shard_stalls_total')).toBe(1);
  });
});
