/**
 * The live dashboard on the metrics listener, in headless Chromium: the page
 * loads, shows a turn that ran, and updates live over server-sent events as
 * another runs; a screenshot is saved to test-results/dashboard.png. Also
 * the listener's dashboard routes (snapshot, stream limit, auth, bad paths)
 * and `agentctl top`, which reads the same snapshot over the socket.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import puppeteer, { type Browser } from 'puppeteer-core';
import { cleanup, collect, makeHome, startDaemon, testClient, testDaemon, type Daemon } from '../helpers/daemon.ts';
import { spawn } from 'node:child_process';
import { AGENTCTL, ctl, finished, spawnCtl, untilOutput } from '../helpers/cli.ts';
import { CHROMIUM, chromiumSkip, findOnPath } from '../helpers/chromium.ts';
import { stdioEntry } from '../helpers/mcp.ts';
import { MAX_EVENT_CLIENTS } from '../../src/main/dashboard/dashboard-routes.ts';
import type { Dashboard } from '../../src/shared/wire/dashboard.ts';

const RESULTS = resolve(import.meta.dirname, '../../test-results');

let d: Daemon;
/** Where the MCP fixture server notes its pid. */
let fixtures: string;
beforeAll(async () => {
  fixtures = mkdtempSync(join(tmpdir(), 'agentd-dash-mcp-'));
  d = await startDaemon({
    workers: 2,
    args: ['--metrics', '127.0.0.1:0'],
    config: {
      providers: { nowhere: { type: 'openai', base_url: 'http://127.0.0.1:9/v1' } },
      agents: {
        assistant: { model: 'echo' },
        broken: { model: 'gpt-nothing', provider: 'nowhere' },
        tooled: { model: 'echo', mcps: { fx: stdioEntry(fixtures, { eager: true }) } },
      },
    },
  });
});
afterAll(async () => {
  await cleanup(d);
  rmSync(fixtures, { recursive: true, force: true });
});

const base = (home: string): string => `http://127.0.0.1:${readFileSync(join(home, 'run', 'metrics.port'), 'utf8').trim()}`;

async function snapshot(): Promise<Dashboard> {
  const res = await fetch(`${base(d.home)}/snapshot`);
  expect(res.status).toBe(200);
  return (await res.json()) as Dashboard;
}

describe.skipIf(chromiumSkip !== null)('the dashboard in headless Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await puppeteer.launch({ executablePath: CHROMIUM!, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  });
  afterAll(() => browser?.close());

  it('shows a turn that ran, then the next one live', async () => {
    const c = await testClient(d);
    await collect(c.stream('assistant', 'hello dashboard', { sender: 'web' }));
    await collect(c.stream('broken', 'this one fails', { sender: 'web' }));
    const page = await browser.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (err) => pageErrors.push(String(err)));
    await page.setViewport({ width: 1280, height: 1000 });
    await page.goto(`${base(d.home)}/`, { waitUntil: 'load' });
    const turnsOf = (agent: string) => page.$eval(`#agents tr[data-key="${agent}"] td.turns`, (td) => Number(td.textContent));
    // The first snapshot arrived and drew the turn: the agent's row, the chart's data, the failed turn.
    // (Expressions as strings: they run in the page, and this project's TypeScript has no DOM types.)
    const agentTurns = `Number(document.querySelector('#agents tr[data-key="assistant"] td.turns')?.textContent)`;
    await page.waitForFunction(`${agentTurns} >= 1`);
    await page.waitForFunction(`Number(document.getElementById('chart').dataset.points) >= 1 && document.querySelector('#chart canvas') !== null`);
    await page.waitForFunction(`[...document.querySelectorAll('#errors td')].some((td) => td.textContent === 'broken')`);
    // The eager MCP server, once connected.
    await page.waitForFunction(`[...document.querySelectorAll('#mcps tbody tr')].some((tr) => tr.cells[1]?.textContent === 'fx' && tr.cells[3]?.textContent === 'connected')`);
    const before = await turnsOf('assistant');
    // Live: another turn, and the page's count moves without a reload.
    await collect(c.stream('assistant', 'and again', { sender: 'web' }));
    await page.waitForFunction(`${agentTurns} >= ${before + 1}`);
    expect(await page.$eval('#live', (el) => el.textContent)).toBe('live');
    expect(await page.$$eval('#shards tbody tr', (rows) => rows.length)).toBe(2);
    expect(await page.$$eval('#conversations tbody td', (tds) => tds.map((td) => td.textContent))).toContain('web');
    mkdirSync(RESULTS, { recursive: true });
    await page.screenshot({ path: join(RESULTS, 'dashboard.png'), fullPage: true });
    expect(pageErrors).toEqual([]);
    await page.close();
  });
});

describe('the dashboard routes', () => {
  it('serve one snapshot as JSON: turns, latency, shards, agents, failed turns', async () => {
    const c = await testClient(d);
    await collect(c.stream('assistant', 'counted', { sender: 'json' }));
    await collect(c.stream('broken', 'fails', { sender: 'json' }));
    // The listener's snapshot is shared for a second: the socket's is taken now.
    const s = await c.call('get_dashboard', {});
    expect(s.turns_total).toBeGreaterThanOrEqual(2);
    expect(s.errors_total).toBeGreaterThanOrEqual(1);
    expect(s.series).toHaveLength(300);
    expect(s.series.reduce((n, x) => n + x.turns, 0)).toBe(s.turns_total);
    expect(s.p99_ms).toBeGreaterThan(0);
    expect(s.p99_ms).toBeGreaterThanOrEqual(s.p50_ms);
    expect(s.shards.map((x) => x.shard)).toEqual([0, 1]);
    expect(s.agents.map((a) => a.name)).toEqual(['assistant', 'broken', 'tooled']);
    expect(s.mcps).toEqual([expect.objectContaining({ agent: 'tooled', name: 'fx', transport: 'stdio' })]);
    expect(s.agents.find((a) => a.name === 'broken')!.errors).toBeGreaterThanOrEqual(1);
    // The failed turn, with the error its client got.
    expect(s.errors[0]).toMatchObject({ agent: 'broken', sender: 'json', code: 'error 500' });
    expect(s.errors[0]!.message).toMatch(/127\.0\.0\.1:9|connect|fetch/i);
    expect(s.conversations.some((x) => x.agent === 'assistant' && x.sender === 'json')).toBe(true);
    expect(s.cluster).toBeNull();
    const http = await snapshot();
    expect(http.agents.map((a) => a.name)).toEqual(['assistant', 'broken', 'tooled']);
  });

  it('serve the page and uPlot from the package, and refuse what they do not serve', async () => {
    const page = await fetch(`${base(d.home)}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(await page.text()).toContain('<script src="dashboard.js">');
    const uplot = await fetch(`${base(d.home)}/uplot.js`);
    expect(uplot.status).toBe(200);
    expect(await uplot.text()).toContain('uPlot');
    expect((await fetch(`${base(d.home)}/nothing-here`)).status).toBe(404);
    expect((await fetch(`${base(d.home)}/snapshot`, { method: 'POST' })).status).toBe(405);
    expect((await fetch(`${base(d.home)}/../package.json`)).status).toBe(404);
    // Loopback without a token: a page on another site (or a rebound name) reads nothing.
    const status = (headers: string[]): string => execFileSync('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', ...headers, `${base(d.home)}/snapshot`], { encoding: 'utf8' });
    expect(status(['-H', 'Host: rebound.example'])).toBe('403');
    expect(status(['-H', 'Origin: https://evil.example'])).toBe('403');
    expect(status([])).toBe('200');
  });

  it(`stream a snapshot a second to at most ${MAX_EVENT_CLIENTS} pages`, async () => {
    const aborts: AbortController[] = [];
    onTestFinished(() => aborts.forEach((a) => a.abort()));
    const open = async (): Promise<Response> => {
      const a = new AbortController();
      aborts.push(a);
      return fetch(`${base(d.home)}/events`, { signal: a.signal });
    };
    const first = await open();
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toContain('text/event-stream');
    const reader = first.body!.getReader();
    let text = '';
    while (!/data: \{.*\}\n\n[\s\S]*data: \{.*\}\n\n/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
    const [a, b] = [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]!) as Dashboard);
    expect(Date.parse(b!.time)).toBeGreaterThan(Date.parse(a!.time));
    // Every open stream is read on, so none is cut as a page that stopped reading while the others open.
    const drain = (r: ReadableStreamDefaultReader<Uint8Array>): void => void (async () => { while (!(await r.read().catch(() => ({ done: true }))).done); })();
    drain(reader);
    for (let i = 1; i < MAX_EVENT_CLIENTS; i++) {
      const res = await open();
      expect(res.status).toBe(200);
      drain(res.body!.getReader());
    }
    const refused = await open();
    expect(refused.status).toBe(429);
    expect(await refused.text()).toContain(`at most ${MAX_EVENT_CLIENTS}`);
  });

  it('end their streams when the daemon stops, so shutdown does not wait on a page', async () => {
    const own = await testDaemon({ workers: 1, args: ['--metrics', '127.0.0.1:0'] });
    const res = await fetch(`${base(own.home)}/events`);
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('data: ')) text += new TextDecoder().decode((await reader.read()).value);
    expect((await own.stop()).code).toBe(0);
    let ended = false;
    while (!ended) ended = (await reader.read()).done;
  });

  it('list main\'s warnings with the failed turns', async () => {
    const home = makeHome();
    chmodSync(home, 0o755); // too open: the daemon tightens it and says so
    const own = await testDaemon({ workers: 1, home });
    const c = await testClient(own);
    const s = await c.call('get_dashboard', {});
    expect(s.errors).toContainEqual(expect.objectContaining({ code: 'log warn', message: expect.stringContaining('tightened permissions') }));
    expect(s.errors_total).toBe(0);
  });

  it('ask for the token off loopback, as /metrics does', async () => {
    const open = await testDaemon({ workers: 1, args: ['--metrics', '0.0.0.0:0'] });
    const token = readFileSync(join(open.home, 'token'), 'utf8').trim();
    for (const path of ['/', '/snapshot', '/events', '/uplot.js']) {
      expect((await fetch(`${base(open.home)}${path}`)).status).toBe(401);
      expect((await fetch(`${base(open.home)}${path}`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    }
    expect((await fetch(`${base(open.home)}/snapshot`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
  });
});

describe('agentctl top', () => {
  it('--once prints one frame: shards, agents, failed turns', async () => {
    const c = await testClient(d);
    await collect(c.stream('assistant', 'for top', { sender: 'top' }));
    const r = await ctl(d.socketPath, ['top', '--once']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^SHARDS$/m);
    expect(r.stdout).toMatch(/^ {2}0 +\d+ +\d+$/m);
    expect(r.stdout).toMatch(/^ {2}1 +\d+ +\d+$/m);
    expect(r.stdout).toMatch(/^ {2}assistant +echo +[1-9]\d* +0 +0$/m);
    expect(r.stdout).toMatch(/^ {2}\d\d:\d\d:\d\d +broken +\S+ +error 500 +\S/m);
    expect(r.stdout).toMatch(/^MCP SERVERS$/m);
    expect(r.stdout).toMatch(/^ {2}tooled +fx +stdio +\w+ /m);
    expect(r.stdout).not.toContain('\x1b[');
  });

  it('--once --json prints the snapshot', async () => {
    const r = await ctl(d.socketPath, ['top', '--once', '--json']);
    expect(r.code).toBe(0);
    const s = JSON.parse(r.stdout) as Dashboard;
    expect(s.agents.map((a) => a.name)).toEqual(['assistant', 'broken', 'tooled']);
    expect(s.shards).toHaveLength(2);
  });

  it('redraws until q arrives on stdin', async () => {
    const proc = spawnCtl(d.socketPath, ['top'], {}, 'pipe');
    const done = finished(proc);
    // Two frames: it refreshes on its own.
    await untilOutput(proc.stdout!, (text) => text.split('SHARDS').length > 2);
    proc.stdin!.write('q\n');
    const r = await done;
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
  });

  // `script` (util-linux) runs top on a pseudo-terminal: raw keys, the alternate screen.
  const script = findOnPath('script');
  it.skipIf(script === null)('on a terminal: takes the alternate screen, quits on the q key alone, gives the screen back', async () => {
    const cmd = [process.execPath, AGENTCTL, 'top', '--socket', d.socketPath].map((a) => `'${a}'`).join(' ');
    const proc = spawn(script!, ['-qfec', cmd, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, TERM: 'xterm', NO_COLOR: '1' } });
    const done = finished(proc);
    await untilOutput(proc.stdout!, (text) => text.includes('\x1b[?1049h') && text.includes('SHARDS'));
    proc.stdin!.write('q'); // one key, no newline: only raw mode passes it on at once
    const r = await done;
    expect(r.code).toBe(0);
    expect(r.stdout.lastIndexOf('\x1b[?1049l')).toBeGreaterThan(r.stdout.lastIndexOf('SHARDS'));
    expect(r.stdout).toContain('q or Ctrl-C quits');
  });

  it('refuses an argument it does not take', async () => {
    const r = await ctl(d.socketPath, ['top', 'extra']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('top');
  });
});
