/**
 * The live view in a cluster: `get_dashboard`, `agentctl top` and the web
 * page of one node show every node with its liveness, partitions and lease
 * age. Two real daemons on NATS and PostgreSQL; without them (or without
 * Chromium, for the page): fails under CI, skipped elsewhere, saying why.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import puppeteer from 'puppeteer-core';
import { collect, testClient, testDaemon, type Daemon } from '../helpers/daemon.ts';
import { settled } from '../helpers/cluster.ts';
import { ctl } from '../helpers/cli.ts';
import { needPostgres, testDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { NATS_URL, needNats, testClusterName } from '../helpers/nats.ts';
import { CHROMIUM, chromiumSkip } from '../helpers/chromium.ts';

const skip = (await needNats()) ?? (await needPostgres());
const PARTITIONS = 8;
const RESULTS = resolve(import.meta.dirname, '../../test-results');

function node(db: TestDatabase, name: string, nodeName: string, extra: string[] = []): Promise<Daemon> {
  return testDaemon({
    config: { agents: { assistant: { model: 'echo' } }, cluster: { name, partitions: PARTITIONS, lease_ms: 2_000 } },
    args: ['--store', db.url, '--cluster', NATS_URL, '--node', nodeName, ...extra],
  });
}

describe.skipIf(skip !== null)('the live view in a cluster', () => {
  it('shows the nodes, their partitions and lease ages', { timeout: 180_000 }, async () => {
    const db = await testDatabase();
    const name = testClusterName();
    const a = await node(db, name, 'a', ['--metrics', '127.0.0.1:0']);
    const b = await node(db, name, 'b');
    const ca = await testClient(a);
    const cb = await testClient(b);
    await settled([ca, cb], ['a', 'b'], PARTITIONS);
    await collect(ca.stream('assistant', 'hello cluster', { sender: 'c1' }));

    const s = await ca.call('get_dashboard', {});
    expect(s.cluster).not.toBeNull();
    expect(s.cluster!.node).toBe('a');
    expect(s.cluster!.nodes.map((n) => [n.node, n.live, n.partitions])).toEqual([['a', true, PARTITIONS / 2], ['b', true, PARTITIONS / 2]]);
    expect(s.cluster!.nodes.every((n) => n.lease_age_ms >= 0)).toBe(true);

    const top = await ctl(a.socketPath, ['top', '--once']);
    expect(top.code).toBe(0);
    expect(top.stdout).toContain(`node a of cluster ${name}`);
    expect(top.stdout).toMatch(new RegExp(`^CLUSTER ${name}: 2 live of 2 nodes, ${PARTITIONS} partitions, 0 unowned$`, 'm'));
    expect(top.stdout).toMatch(new RegExp(`^ {2}a \\(this\\) +yes +${PARTITIONS / 2} +\\d+ ms$`, 'm'));
    expect(top.stdout).toMatch(new RegExp(`^ {2}b +yes +${PARTITIONS / 2} +\\d+ ms$`, 'm'));

    if (chromiumSkip !== null) return;
    const browser = await puppeteer.launch({ executablePath: CHROMIUM!, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
    onTestFinished(() => browser.close());
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 1000 });
    const port = readFileSync(join(a.home, 'run', 'metrics.port'), 'utf8').trim();
    await page.goto(`http://127.0.0.1:${port}/`, { waitUntil: 'load' });
    await page.waitForFunction(`!document.getElementById('cluster-section').hidden && document.querySelectorAll('#nodes tbody tr').length === 2`);
    const nodes = await page.$$eval('#nodes tbody tr', (rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent)));
    expect(nodes.map((r) => r.slice(0, 3))).toEqual([['a (this)', 'yes', String(PARTITIONS / 2)], ['b', 'yes', String(PARTITIONS / 2)]]);
    expect(nodes.every((r) => /^\d+ ms$/.test(r[3]!))).toBe(true);
    mkdirSync(RESULTS, { recursive: true });
    await page.screenshot({ path: join(RESULTS, 'dashboard-cluster.png'), fullPage: true });
  });
});
