/**
 * Issue 10, transport half: TCP is authenticated by default, an
 * unauthenticated connection costs next to nothing, agentd's files are
 * private whatever existed before, and each listener has a connection cap.
 * Each test is one of the attacks in the issue, kept as a regression test.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { encodeBody, encodeFrame, HEADER_BYTES } from '../../src/shared/codec.ts';
import { makeHome, startDaemon, testDaemon, waitFor, type Daemon } from '../helpers/daemon.ts';
import { RawConn } from '../helpers/raw.ts';

const AGENTCTL = resolve(import.meta.dirname, '../../bin/agentctl.mjs');
const mode = (path: string): number => statSync(path).mode & 0o777;

async function rawTcp(d: Daemon): Promise<RawConn> {
  const raw = await RawConn.openTcp(d.port!);
  onTestFinished(() => raw.close());
  return raw;
}

/** Sends `frames` on a fresh unauthenticated TCP connection; returns the one reply once the daemon closed it. */
async function refusedBeforeAuth(d: Daemon, bytes: Uint8Array): Promise<RawConn> {
  const raw = await rawTcp(d);
  raw.write(bytes);
  await raw.waitClosed();
  return raw;
}

describe('TCP is authenticated by default', () => {
  it('creates $AGENTD_HOME/token (0600, 64 hex digits) on the first start and reuses it after a restart', async () => {
    const first = await startDaemon();
    const path = join(first.home, 'token');
    const token = readFileSync(path, 'utf8').trim();
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    expect(mode(path)).toBe(0o600);
    await first.stop();
    const d = await testDaemon({ home: first.home });
    expect(readFileSync(path, 'utf8').trim()).toBe(token);
    const c = await d.tcpClient({ token });
    onTestFinished(() => c.close());
    await c.ping();
    expect(d.stderr()).not.toContain(token);
  });

  it('a TCP request without auth gets 401 and a close; the client and agentctl find the token through --home', async () => {
    const d = await testDaemon();
    const raw = await refusedBeforeAuth(d, encodeFrame(1, 0, encodeBody({ ping: {} })));
    expect(raw.frames).toEqual([{ id: 1, last: true, body: { error: { code: 401, message: expect.stringMatching(/first request must be \{"auth"/) } } }]);

    const c = await d.tcpClient(); // the helper passes `home`: the library reads HOME/token
    onTestFinished(() => c.close());
    await c.ping();

    const ctl = spawnSync(process.execPath, [AGENTCTL, '--home', d.home, '--tcp', `127.0.0.1:${d.port}`, 'ping'], { encoding: 'utf8', env: { ...process.env, AGENTD_TOKEN: '' } });
    expect(ctl.stderr).toBe('');
    expect(ctl.stdout).toMatch(/^pong in [\d.]+ (µs|ms)/);
    expect(ctl.status).toBe(0);
  });

  it('a wrong token is answered "wrong token"', async () => {
    const d = await testDaemon();
    await expect(d.tcpClient({ token: 'guess' })).rejects.toMatchObject({ code: 401, message: 'wrong token' });
  });

  it('--tcp-insecure serves TCP without a token and creates no token file', async () => {
    const d = await testDaemon({ args: ['--tcp-insecure'] });
    const raw = await rawTcp(d);
    raw.send(1, { ping: {} });
    expect(await raw.request(1)).toEqual([{ id: 1, last: true, body: { pong: {} } }]);
    expect(existsSync(join(d.home, 'token'))).toBe(false);
  });
});

describe('before auth a connection is nearly nothing', () => {
  it('a first frame that is not auth gets 401 and a close', async () => {
    const d = await testDaemon();
    const raw = await refusedBeforeAuth(d, encodeFrame(7, 0, encodeBody({ list_agents: {} })));
    expect(raw.frames).toMatchObject([{ id: 7, body: { error: { code: 401 } } }]);
  });

  it('invalid msgpack before auth gets 401 and a close', async () => {
    const d = await testDaemon();
    const raw = await refusedBeforeAuth(d, encodeFrame(3, 0, Uint8Array.of(0xc1))); // 0xc1 is never valid
    expect(raw.frames).toMatchObject([{ id: 3, body: { error: { code: 401 } } }]);
  });

  it('a 16 MiB first frame is refused at its header: 401 and close while the body never arrives, and Unix answers meanwhile', async () => {
    const d = await testDaemon();
    const announced = 16 * 1024 * 1024;
    const attackers = await Promise.all(Array.from({ length: 4 }, () => rawTcp(d)));
    for (const raw of attackers) {
      const head = Buffer.alloc(HEADER_BYTES + 1024 * 1024, 0x91); // the header, then 1 MiB of the body
      head.writeUInt32BE(announced, 0);
      head.writeUInt32BE(1, 4);
      head[8] = 0;
      raw.write(head);
    }
    // The bodies stay incomplete for the whole test: the 401s can only come from the headers.
    const local = await d.client();
    onTestFinished(() => local.close());
    await local.ping();
    for (const raw of attackers) {
      await raw.waitClosed();
      expect(raw.frames).toMatchObject([{ id: 1, body: { error: { code: 401 } } }]);
    }
    await local.ping();
  });

  it('auth followed by a larger frame in the same write: the limit rises once authenticated', async () => {
    const d = await testDaemon();
    const token = readFileSync(join(d.home, 'token'), 'utf8').trim();
    const raw = await rawTcp(d);
    const big = encodeFrame(2, 0, encodeBody({ send: { agent: 'assistant', content: 'word '.repeat(2000) } }));
    raw.write(Buffer.concat([encodeFrame(1, 0, encodeBody({ auth: { token } })), big]));
    expect(await raw.request(1)).toEqual([{ id: 1, last: true, body: { pong: {} } }]);
    expect((await raw.request(2))[0]!.body.response.content).toBe('word '.repeat(2000));
  });

  it('a connection that does not authenticate in time is closed (auth_timeout_ms)', async () => {
    const d = await testDaemon({ config: { auth_timeout_ms: 200 } });
    const raw = await rawTcp(d);
    await raw.waitClosed(); // it sends nothing: only the daemon's timer can close it
    expect(raw.frames).toMatchObject([{ id: 0, body: { error: { code: 401, message: 'not authenticated within 200 ms' } } }]);
  });
});

describe('private files whatever existed before', () => {
  it('a 0755 home and run/ are tightened to 0700, with a warning', async () => {
    const home = makeHome();
    chmodSync(home, 0o755);
    mkdirSync(join(home, 'run'), { mode: 0o755 });
    chmodSync(join(home, 'run'), 0o755);
    const d = await testDaemon({ home });
    expect(mode(home)).toBe(0o700);
    expect(mode(join(home, 'run'))).toBe(0o700);
    expect(d.stderr()).toMatch(/tightened permissions/);
  });

  it('database, WAL, SHM, port file, socket and token are 0600, even over files left 0644 by an earlier run', async () => {
    const home = makeHome();
    chmodSync(home, 0o755);
    const first = await startDaemon({ home });
    const c = await first.client();
    await c.send('assistant', 'something private');
    await c.close();
    await first.stop('SIGKILL'); // leaves the WAL, SHM and port file behind
    const db = join(home, 'agentd.db');
    const port = join(home, 'run', 'agentd.port');
    for (const f of [db, `${db}-wal`, `${db}-shm`, port, join(home, 'token')]) if (existsSync(f)) chmodSync(f, 0o644);
    chmodSync(home, 0o755);

    const d = await testDaemon({ home });
    const again = await d.client();
    onTestFinished(() => again.close());
    await again.send('assistant', 'more private words');
    for (const f of [db, `${db}-wal`, `${db}-shm`, port, d.socketPath, join(home, 'token')]) {
      expect(existsSync(f), f).toBe(true);
      expect(mode(f), f).toBe(0o600);
    }
  });

  it('files created on a fresh home are 0600 from the start (SQLite WAL and SHM included)', async () => {
    const d = await testDaemon();
    const c = await d.client();
    onTestFinished(() => c.close());
    await c.send('assistant', 'hello');
    const db = join(d.home, 'agentd.db');
    for (const f of [db, `${db}-wal`, `${db}-shm`, join(d.home, 'run', 'agentd.port'), join(d.home, 'token')]) expect(mode(f), f).toBe(0o600);
  });
});

/** Runs a node script as uid/gid 65534; null (with the reason printed) when this process is not root. */
function asNobody(script: string, args: string[]): Promise<string | null> {
  if (process.getuid?.() !== 0) {
    console.log('skipped: running as another OS user needs root (setpriv --reuid=65534)');
    return Promise.resolve(null);
  }
  return new Promise((resolvePromise, reject) => {
    const p = spawn('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '-e', script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (b: Buffer) => (out += b.toString()));
    p.stderr.on('data', (b: Buffer) => (err += b.toString()));
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 ? resolvePromise(out) : reject(new Error(`as uid 65534: exit ${code}\n${err}`))));
  });
}

/** Tries, as whoever runs it, the Unix socket, the database, the token and an unauthenticated TCP ping. */
const PROBE = `
const net = require('node:net'); const fs = require('node:fs');
const [sock, db, token, port] = process.argv.slice(1);
const tryRead = (f) => { try { fs.readFileSync(f); return 'read'; } catch (e) { return e.code; } };
const unix = new Promise((r) => { const s = net.createConnection(sock); s.on('connect', () => { s.destroy(); r('connected'); }); s.on('error', (e) => r(e.code)); });
const tcp = new Promise((r) => {
  const s = net.createConnection({ host: '127.0.0.1', port: Number(port) });
  const body = Buffer.from([0x81, 0xa4, 0x70, 0x69, 0x6e, 0x67, 0x80]); // {ping: {}}
  const h = Buffer.alloc(9); h.writeUInt32BE(body.length, 0); h.writeUInt32BE(1, 4);
  let got = Buffer.alloc(0);
  s.on('connect', () => s.write(Buffer.concat([h, body])));
  s.on('data', (c) => { got = Buffer.concat([got, c]); });
  s.on('close', () => r(got.includes(Buffer.from([0xa4, 0x63, 0x6f, 0x64, 0x65, 0xcd, 0x01, 0x91])) ? '401' : 'other:' + got.toString('hex'))); // "code": 401
  s.on('error', () => {});
});
Promise.all([unix, tcp]).then(([u, t]) => console.log(JSON.stringify({ unix: u, db: tryRead(db), token: tryRead(token), tcp: t })));
`;

describe('another local user gets nothing', () => {
  it('uid 65534 cannot connect to the Unix socket, read the database or the token, or use TCP without the token', async () => {
    const home = makeHome();
    chmodSync(home, 0o755); // as an older agentd or a careless mkdir would have left it
    const d = await testDaemon({ home });
    const c = await d.client();
    onTestFinished(() => c.close());
    await c.send('assistant', 'my bank pin is zebra4471');
    const out = await asNobody(PROBE, [d.socketPath, join(home, 'agentd.db'), join(home, 'token'), String(d.port)]);
    if (out === null) return;
    expect(JSON.parse(out)).toEqual({ unix: 'EACCES', db: 'EACCES', token: 'EACCES', tcp: '401' });
  });
});

describe('connection limit per listener', () => {
  const tokenOf = (d: Daemon): string => readFileSync(join(d.home, 'token'), 'utf8').trim();
  /** One after another: at most half the slots may be unauthenticated at once. */
  async function authenticated(d: Daemon, n: number): Promise<RawConn[]> {
    const conns: RawConn[] = [];
    for (let i = 0; i < n; i++) {
      const r = await rawTcp(d);
      r.send(1, { auth: { token: tokenOf(d) } });
      expect(await r.request(1)).toEqual([{ id: 1, last: true, body: { pong: {} } }]);
      conns.push(r);
    }
    return conns;
  }

  it('past max_connections TCP gets one 429 frame and a close, while the Unix socket keeps answering', async () => {
    const cap = 50;
    const d = await testDaemon({ config: { max_connections: cap, auth_timeout_ms: 600_000 } });
    const held = await authenticated(d, cap);
    const extra = await Promise.all(Array.from({ length: 10 }, () => rawTcp(d)));
    await waitFor(() => extra.every((r) => r.closed), '10 refused connections');
    for (const r of extra) expect(r.frames).toMatchObject([{ id: 0, last: true, body: { error: { code: 429, message: expect.stringMatching(/max_connections 50/) } } }]);

    const local = await d.client();
    onTestFinished(() => local.close());
    await local.ping();
    const { stats } = (await local.request('get_stats')) as { stats: Record<string, any> };
    expect(stats.connections_by_listener.tcp).toBe(cap);
    expect(stats.connections_by_listener.unix).toBeGreaterThanOrEqual(1);
    expect(stats.refused_connections).toEqual({ unix: 0, tcp: 10, http: 0 });
    expect(stats.limits).toMatchObject({ max_connections: cap });
    // The held connections are not affected.
    held[0]!.send(2, { ping: {} });
    expect(await held[0]!.request(2)).toEqual([{ id: 2, last: true, body: { pong: {} } }]);
  });

  it('connections that never authenticate hold at most half the TCP slots; a client with the token always gets in', async () => {
    const cap = 50;
    const d = await testDaemon({ config: { max_connections: cap, auth_timeout_ms: 600_000 } });
    const flood = await Promise.all(Array.from({ length: 300 }, () => rawTcp(d)));
    await waitFor(() => flood.filter((r) => r.closed).length === 300 - cap / 2, `${300 - cap / 2} evicted connections`);
    // The oldest were closed to make room, each with one 429 that says why.
    for (const r of flood.filter((c) => c.closed)) {
      expect(r.frames).toMatchObject([{ id: 0, last: true, body: { error: { code: 429, message: expect.stringMatching(/unauthenticated/) } } }]);
    }
    // A client with the token gets in during the flood, and keeps its slot through another one.
    const client = await d.tcpClient({ token: tokenOf(d) });
    onTestFinished(() => client.close());
    await client.ping();
    const more = await Promise.all(Array.from({ length: 100 }, () => rawTcp(d)));
    // Each of the second flood closed the oldest unauthenticated one: all of the first, then its own oldest.
    await waitFor(() => flood.every((r) => r.closed) && more.filter((r) => r.closed).length === 100 - cap / 2, 'the second flood evicted the first');
    await client.ping();
    const { stats } = (await client.request('get_stats')) as { stats: Record<string, any> };
    expect(stats.unauthenticated_connections).toBe(cap / 2);
    expect(stats.unauthenticated_evicted).toBe(300 - cap / 2 + 100);
    expect(stats.connections_by_listener.tcp).toBe(cap / 2 + 1);
    expect(stats.refused_connections).toEqual({ unix: 0, tcp: 0, http: 0 });
  });
});
