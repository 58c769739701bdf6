/**
 * The failover verifier (issue 16, milestone 3): three nodes on one NATS and
 * one PostgreSQL database, clients on each sending and streaming turns with
 * `turn_id`s to many pairs; one node is killed (SIGKILL) under load, the two
 * others take its partitions, and the node starts again under its own name
 * (even rounds) or a fresh node joins (odd rounds), five rounds over. From the
 * clients' acknowledgements and the store's history the verifier counts lost
 * acknowledged turns, duplicated turns and order violations within a pair:
 * all must be 0. A turn under way at the dead node ends, for a client on a
 * node that stays, with an error saying the node failed and that whether the
 * turn was stored is unknown; the client's retry with the same turn_id is
 * answered from storage when it was stored (`replayed`), run once when it was
 * not. Without NATS or PostgreSQL: fails under CI, skipped elsewhere,
 * saying why.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import type { AgentdClient } from '../../src/client/index.ts';
import { assignPartitions } from '../../src/shared/partitions.ts';
import { ctl } from '../helpers/cli.ts';
import { testDaemon, waitFor, type Daemon } from '../helpers/daemon.ts';
import { clusterStats } from '../helpers/cluster.ts';
import { needPostgres, testDatabase } from '../helpers/postgres.ts';
import { NATS_URL, needNats, testClusterName } from '../helpers/nats.ts';

const skip = (await needNats()) ?? (await needPostgres());

const PARTITIONS = 16;
const LEASE_MS = 2_000;
/** `slow`: 20 ms a word, so a turn of TURN_WORDS words runs about 200 ms: turns are under way when a node dies. */
const AGENTS = { slow: { model: 'echo', echo: { delay_ms: 20 } } };
const TURN_WORDS = 10;
const PAIRS = 12;
const ROUNDS = 5;
/** Five rounds of a kill and a start on a loaded 2-core machine (a start alone can take 20 s). */
const TIMEOUT = 600_000;

interface Entry {
  name: string;
  daemon: Daemon;
  client: AgentdClient;
  alive: boolean;
}

/** How one turn ended for its client: `ok` (its reply came: acknowledged) or `cancelled` (its stored outcome was a cancellation). */
type Outcome = 'ok' | 'cancelled';

interface Pair {
  sender: string;
  /** Each turn's outcome, by its number; a turn gets one only once its client has a final answer. */
  outcomes: Outcome[];
}

const turnText = (sender: string, t: number): string => `${sender} t${t}${' word'.repeat(TURN_WORDS - 2)}`;
const turnId = (sender: string, t: number): string => `${sender}-t${t}`;

describe.skipIf(skip !== null)('cluster mode: failover verifier', () => {
  it(`kill -9 of a node under load, ${ROUNDS} rounds: no acknowledged turn lost, none duplicated, none out of order`, async () => {
    const db = await testDatabase();
    const cluster = testClusterName();

    const start = async (name: string): Promise<Entry> => {
      const daemon = await testDaemon({
        config: { agents: AGENTS, cluster: { name: cluster, partitions: PARTITIONS, lease_ms: LEASE_MS } },
        args: ['--store', db.url, '--cluster', NATS_URL, '--node', name],
      });
      const client = await daemon.client();
      onTestFinished(() => client.close());
      return { name, daemon, client, alive: true };
    };
    /** Waits until every live node sees exactly the live ones and serves its even share. */
    const settled = async (nodes: Entry[]): Promise<void> => {
      const names = nodes.map((n) => n.name).sort();
      const share = assignPartitions(PARTITIONS, names);
      await waitFor(async () => {
        for (const n of nodes) {
          const s = await clusterStats(n.client);
          if (s.live_nodes.join() !== names.join()) return false;
          if (s.served_partitions !== share.filter((o) => o === s.node).length) return false;
        }
        return true;
      }, `partitions spread over ${names.join(', ')}`, 60_000);
    };

    const slots: Entry[] = [];
    for (const name of ['a', 'b', 'c']) slots.push(await start(name));
    await settled(slots);

    const counts = { owner_failed: 0, entry_lost: 0, unserved: 0, replayed: 0, cancelled: 0 };
    const unexpected: string[] = [];
    const pairs: Pair[] = Array.from({ length: PAIRS }, (_, i) => ({ sender: `v${i}`, outcomes: [] }));
    let stop = false;
    onTestFinished(() => {
      stop = true; // a failed test must not leave its client loops spinning
    });

    /** One turn through `entry`: stream for even pairs, send for odd ones. */
    const runTurn = async (entry: Entry, i: number, sender: string, t: number): Promise<{ outcome: Outcome; replayed: boolean }> => {
      const opts = { sender, turn_id: turnId(sender, t) };
      if (i % 2 === 1) {
        try {
          const r = await entry.client.send('slow', turnText(sender, t), opts);
          expect(r.content).toBe(turnText(sender, t));
          return { outcome: 'ok', replayed: r.replayed === true };
        } catch (err) {
          if ((err as { code?: number }).code === 499) return { outcome: 'cancelled', replayed: false };
          throw err;
        }
      }
      let text = '';
      for await (const ev of entry.client.stream('slow', turnText(sender, t), opts)) {
        if (ev.type === 'chunk') text += ev.content;
        if (ev.type === 'end') {
          if (ev.stop_reason === 'cancelled') return { outcome: 'cancelled', replayed: ev.replayed === true };
          expect(ev.error).toBe('');
          expect(text).toBe(turnText(sender, t));
          return { outcome: 'ok', replayed: ev.replayed === true };
        }
      }
      throw new Error('the stream ended without an end event');
    };

    const loops = pairs.map(async (pair, i) => {
      let attempt = 0;
      while (!stop) {
        const t = pair.outcomes.length;
        const live = slots.filter((s) => s.alive);
        const entry = live[(i + attempt) % live.length]!;
        try {
          const r = await runTurn(entry, i, pair.sender, t);
          pair.outcomes.push(r.outcome);
          if (r.replayed) counts.replayed++;
          if (r.outcome === 'cancelled') counts.cancelled++;
        } catch (err) {
          // The same turn_id again, through another node: a stored turn is replayed, one that was not runs once.
          attempt++;
          const message = (err as Error).message;
          if (!entry.alive || entry.daemon.proc.exitCode !== null || entry.daemon.proc.signalCode !== null) counts.entry_lost++;
          else if (/cluster node \S+ failed .*whether the turn was stored is unknown/.test(message)) counts.owner_failed++;
          else if (/it is changing hands/.test(message)) counts.unserved++;
          else unexpected.push(`${pair.sender} turn ${t} through ${entry.name}: ${message}`);
        }
      }
    });

    const takeovers: number[] = [];
    const progress = (): number => Math.min(...pairs.map((p) => p.outcomes.length));
    for (let round = 0; round < ROUNDS; round++) {
      // Under load: every pair has turns done since the last round.
      const before = progress();
      await waitFor(() => progress() >= before + 2, `turns in round ${round}`, 60_000);
      const k = round % slots.length;
      const victim = slots[k]!;
      victim.alive = false;
      const killedAt = performance.now();
      await victim.daemon.stop('SIGKILL');
      // Served again: every partition served by one of the nodes that stay (then their even spread, after any rebalance between them).
      const survivors = slots.filter((s) => s.alive);
      await waitFor(async () => (await Promise.all(survivors.map((s) => clusterStats(s.client)))).reduce((n, s) => n + s.served_partitions, 0) === PARTITIONS, `${victim.name}'s partitions served again`, 60_000);
      takeovers.push(Math.round(performance.now() - killedAt));
      await settled(survivors);
      if (round === 0) {
        // get_stats and `agentctl cluster` on a node that stays: the dead node is known, not live, owns nothing, its lease older than 0.8 of lease_ms.
        const survivor = slots[1]!;
        const s = await clusterStats(survivor.client);
        const share = assignPartitions(PARTITIONS, ['b', 'c']);
        expect(s).toMatchObject({ node: 'b', partitions: PARTITIONS, lease_ms: LEASE_MS, live_nodes: ['b', 'c'], unowned_partitions: 0 });
        expect(s.nodes.map((n) => [n.node, n.live, n.partitions])).toEqual([
          ['a', false, 0],
          ['b', true, share.filter((o) => o === 'b').length],
          ['c', true, share.filter((o) => o === 'c').length],
        ]);
        expect(s.nodes[0]!.lease_age_ms).toBeGreaterThanOrEqual(LEASE_MS * 0.8); // others count a node gone after 0.8 of lease_ms (lease-core.ts GONE_AFTER)
        expect(s.nodes[1]!.lease_age_ms).toBeLessThan(LEASE_MS);
        expect(s.lease_left_ms).toBeGreaterThan(0);
        expect(s.forwarded).toBeGreaterThan(0);
        expect(s.served_for_others).toBeGreaterThan(0);
        const [text, asJson] = await Promise.all([ctl(survivor.daemon.socketPath, ['cluster']), ctl(survivor.daemon.socketPath, ['cluster', '--json'])]);
        console.log(`agentctl cluster on b after a was killed:\n${text.stdout}`);
        expect(text.code).toBe(0);
        expect(text.stdout).toMatch(new RegExp(`^cluster ${cluster}: node b, 2 live of 3 known, ${PARTITIONS} partitions, lease ${LEASE_MS} ms\n`));
        expect(text.stdout).toMatch(/\n {2}a\s+no\s+0\s+\d+ ms\n/);
        expect(text.stdout).toMatch(new RegExp(`\\n {2}b \\(this\\)\\s+yes\\s+${share.filter((o) => o === 'b').length}\\s+\\d+ ms\\n`));
        expect(text.stdout).toMatch(/\n {2}forwarded to other nodes\s+\d+\n/);
        expect(JSON.parse(asJson.stdout)).toMatchObject({ node: 'b', live_nodes: ['b', 'c'] });
      }
      // Even rounds restart the dead node under its own name (its old heartbeat and partitions still in the bucket); odd ones start a fresh node.
      slots[k] = await start(round % 2 === 0 ? victim.name : `n${round}`);
      await settled(slots);
    }
    const before = progress();
    await waitFor(() => progress() >= before + 2, 'turns after the last round', 60_000);
    stop = true;
    await Promise.all(loops);

    // The verifier: each pair's stored history against its clients' acknowledgements.
    const reader = slots[0]!.client;
    const verdict = { acknowledged: 0, lost: 0, duplicates: 0, order_violations: 0 };
    for (const pair of pairs) {
      const h = (await reader.history('slow', pair.sender)) as unknown as { messages: { role: string; content: string }[] };
      const seen = new Map<number, number>();
      let last = -1;
      for (let m = 0; m < h.messages.length; m++) {
        const msg = h.messages[m]!;
        if (msg.role !== 'user') continue;
        const match = new RegExp(`^${pair.sender} t(\\d+) `).exec(msg.content);
        if (match === null) {
          verdict.order_violations++;
          continue;
        }
        const t = Number(match[1]);
        seen.set(t, (seen.get(t) ?? 0) + 1);
        if (t <= last) verdict.order_violations++;
        last = Math.max(last, t);
        // An acknowledged turn's reply follows its own message, no other turn's beside it.
        if (pair.outcomes[t] === 'ok') {
          const reply = h.messages[m + 1];
          if (reply?.role !== 'assistant' || reply.content !== msg.content) verdict.order_violations++;
        }
      }
      for (const [, n] of seen) if (n > 1) verdict.duplicates += n - 1;
      pair.outcomes.forEach((o, t) => {
        if (o !== 'ok') return;
        verdict.acknowledged++;
        if (!seen.has(t)) verdict.lost++;
      });
    }
    // Stored outcomes: one per turn_id (the table's key), and one for every turn a client got an answer for.
    const stored = await db.query<{ n: string }>('SELECT count(*) AS n FROM turn_outcomes');
    const answered = pairs.reduce((n, p) => n + p.outcomes.length, 0);

    console.log(
      `failover verifier: ${ROUNDS} rounds, ${PAIRS} pairs, ${verdict.acknowledged} acknowledged turns, ${answered} answered, ${stored[0]!.n} stored outcomes; ` +
        `lost ${verdict.lost}, duplicates ${verdict.duplicates}, order violations ${verdict.order_violations}; ` +
        `errors: owner failed ${counts.owner_failed}, entry node killed ${counts.entry_lost}, changing hands ${counts.unserved}; ` +
        `retries replayed ${counts.replayed}, cancelled ${counts.cancelled}; all partitions served again after the kill in ms ${takeovers.join(', ')} (lease_ms ${LEASE_MS})`,
    );
    expect(unexpected).toEqual([]);
    expect(verdict).toMatchObject({ lost: 0, duplicates: 0, order_violations: 0 });
    expect(verdict.acknowledged).toBeGreaterThan(PAIRS * 2 * (ROUNDS + 1) - 1);
    expect(Number(stored[0]!.n)).toBe(answered);
    // Turns were under way at the dead nodes: their clients on other nodes were told so, or lost their entry node.
    expect(counts.owner_failed).toBeGreaterThan(0);
  }, TIMEOUT);
});
