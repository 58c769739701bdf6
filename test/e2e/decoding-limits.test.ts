/** Issue 11 over real sockets: bounded decoding (max_elements) and the echo maxima. */
import { describe, expect, it, onTestFinished } from 'vitest';
import { encodeBody, encodeFrame } from '../../src/shared/codec.ts';
import { makeHome, runAgentd, testClient, testDaemon, type Daemon } from '../helpers/daemon.ts';
import { RawConn } from '../helpers/raw.ts';
import { bigMapBody } from '../helpers/big-bodies.ts';
import { AgentdError } from '../../src/client/index.ts';

async function raw(d: Daemon): Promise<RawConn> {
  const c = await RawConn.open(d.socketPath);
  onTestFinished(() => c.close());
  return c;
}

describe('bounded decoding', () => {
  it('refuses a 16 MiB body of 2.6M map keys with 400, answers a ping elsewhere meanwhile, and the connection stays usable', async () => {
    const d = await testDaemon({ workers: 1 });
    const [big, other] = await Promise.all([raw(d), raw(d)]);
    big.write(encodeFrame(1, 0, bigMapBody(2_600_000)));
    other.send(7, { ping: {} });
    const [[refusal], [pong]] = await Promise.all([big.request(1), other.request(7)]);
    expect(pong!.body).toEqual({ pong: {} });
    expect(refusal!.body.error.code).toBe(400);
    expect(refusal!.body.error.message).toMatch(/more than 100000 array or map entries \(max_elements\), refused at byte 5/);
    big.send(2, { ping: {} });
    expect((await big.request(2))[0]!.body).toEqual({ pong: {} });
    expect(big.closed).toBe(false);
  });

  it('takes max_elements from the config file: one entry over it is refused, the limit itself is served', async () => {
    const d = await testDaemon({ workers: 1, config: { max_elements: 4 } });
    const c = await raw(d);
    // {get_stats: {a: [1, 2]}}: 1 + 1 + 2 = 4 entries; one more element makes 5.
    c.send(1, { get_stats: { a: [1, 2] } });
    c.send(2, { get_stats: { a: [1, 2, 3] } });
    const [[ok], [refused]] = await Promise.all([c.request(1), c.request(2)]);
    expect(ok!.body.stats).toBeDefined();
    expect(refused!.body.error).toEqual({ code: 400, message: expect.stringMatching(/more than 4 array or map entries \(max_elements\)/) });
  });

  it('refuses at once a tiny body whose map header claims 2^32-1 entries', async () => {
    const d = await testDaemon({ workers: 1 });
    const c = await raw(d);
    c.write(encodeFrame(3, 0, Uint8Array.from([0xdf, 0xff, 0xff, 0xff, 0xff, 0xa4, 0x70, 0x69, 0x6e, 0x67, 0x80])));
    const [reply] = await c.request(3);
    expect(reply!.body.error.code).toBe(400);
    expect(reply!.body.error.message).toMatch(/max_elements/);
    c.write(encodeFrame(4, 0, encodeBody({ ping: {} })));
    expect((await c.request(4))[0]!.body).toEqual({ pong: {} });
  });
});

describe('echo maxima', () => {
  it('create_agent with echo.cpu_us 2^53 is refused with 400 and nothing is created', async () => {
    const d = await testDaemon({ workers: 1 });
    const c = await testClient(d);
    const err = await c.request('create_agent', { name: 'hot', config: { echo: { cpu_us: 2 ** 53 } } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentdError);
    expect((err as AgentdError).code).toBe(400);
    expect((err as AgentdError).message).toMatch(/config\.echo\.cpu_us must be an integer >= 0 and <= 1000000, got 9007199254740992/);
    const list = await c.request('list_agents', {});
    expect((list.agent_list as { agents: { name: string }[] }).agents.map((a) => a.name)).not.toContain('hot');
  });

  it('update_agent past a maximum is refused with 400 and the agent keeps its settings', async () => {
    const d = await testDaemon({ workers: 1 });
    const c = await testClient(d);
    await c.request('create_agent', { name: 'warm', config: { echo: { delay_ms: 1_000, cpu_us: 1_000_000 } } });
    const err = await c.request('update_agent', { name: 'warm', config: { echo: { delay_ms: 1_001 } } }).catch((e: unknown) => e);
    expect((err as AgentdError).code).toBe(400);
    expect((err as AgentdError).message).toMatch(/echo\.delay_ms must be an integer >= 0 and <= 1000/);
    const info = await c.request('get_agent', { name: 'warm' });
    expect((info.agent_info as { config: { echo: unknown } }).config.echo).toEqual({ delay_ms: 1_000, cpu_us: 1_000_000 });
  });

  it('a config file past a maximum stops start-up with a clear error', async () => {
    const home = makeHome({ agents: { hot: { echo: { cpu_us: 2_000_000 } } } });
    const r = await runAgentd(['--home', home, '--tcp', 'off']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/agents\.hot\.echo\.cpu_us must be an integer >= 0 and <= 1000000, got 2000000/);
  });
});
