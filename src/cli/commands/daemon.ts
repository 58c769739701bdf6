/** The daemon: ping, stats, cluster (PROTOCOL §4.9). */
import { type Command, type Context, Exit } from '../command.ts';
import { duration } from '../output.ts';
import { top } from './top.ts';

const ping: Command = {
  name: 'ping',
  usage: '',
  summary: 'check that the daemon answers; prints the round trip',
  example: 'agentctl ping',
  arity: [0, 0],
  async run({ client, json, out }: Context) {
    const t0 = process.hrtime.bigint();
    const r = await client.call('ping', {});
    const us = Number(process.hrtime.bigint() - t0) / 1000;
    if (json) out.json(r);
    else out.line(`pong in ${us < 1000 ? `${us.toFixed(0)} µs` : `${(us / 1000).toFixed(1)} ms`}`);
  },
};

const stats: Command = {
  name: 'stats',
  usage: '',
  summary: 'a summary of the daemon: version, uptime, workers, agents, conversations, connections',
  example: 'agentctl stats',
  arity: [0, 0],
  async run({ client, json, out }: Context) {
    const s = await client.stats();
    if (json) return out.json(s);
    out.line(out.out.bold(`agentd ${s.version}, up ${duration(s.uptime_secs)}`));
    out.table([
      ['  workers', String(s.workers)],
      ['  agents', String(s.registered_agents)],
      ['  active model', s.active_model === '' ? '(no agents)' : s.active_model],
      ['  conversations in memory', String(s.active_conversations)],
      ['  subscriptions', String(s.subscriptions)],
      ['  connections', `${s.connections} (this one included)`],
    ]);
  },
};

const cluster: Command = {
  name: 'cluster',
  usage: '',
  summary: 'the cluster as this node sees it: nodes, partitions per node, lease ages, forwarded requests',
  example: 'agentctl cluster',
  arity: [0, 0],
  async run({ client, json, out }: Context) {
    const c = (await client.stats()).cluster;
    if (c === undefined) {
      out.note('this daemon is not in cluster mode (it was started without --cluster): there is no cluster to show');
      return Exit.DaemonError;
    }
    if (json) return out.json(c);
    out.line(out.out.bold(`cluster ${c.name}: node ${c.node}, ${c.live_nodes.length} live of ${c.nodes.length} known, ${c.partitions} partitions, lease ${c.lease_ms} ms`));
    out.table([
      ['  NODE', 'LIVE', 'PARTITIONS', 'LEASE AGE'],
      ...c.nodes.map((n) => [`  ${n.node}${n.node === c.node ? ' (this)' : ''}`, `${n.live ? 'yes' : 'no'}${n.draining ? ' (draining)' : ''}`, String(n.partitions), `${n.lease_age_ms} ms`]),
    ]);
    out.table([
      ['  unowned partitions', String(c.unowned_partitions)],
      ['  served here', `${c.served_partitions} (lease valid for ${c.lease_left_ms} ms more)`],
      ['  forwarded to other nodes', String(c.forwarded)],
      ['  run for other nodes', String(c.served_for_others)],
      ['  held while changing hands', String(c.held)],
    ]);
  },
};

const reload: Command = {
  name: 'reload',
  usage: '',
  summary: 'read agentd.json again and apply what can change live (as SIGHUP); prints what was applied and what needs a restart',
  example: 'agentctl reload',
  arity: [0, 0],
  async run({ client, json, out }: Context) {
    const r = await client.reloadConfig();
    if (json) return out.json(r);
    out.line(r.applied.length === 0 ? 'applied: nothing (no live setting changed)' : `applied: ${r.applied.join(', ')}`);
    if (r.restart_required.length > 0) out.line(`changed, applied at the next start: ${r.restart_required.join(', ')}`);
  },
};

const drain: Command = {
  name: 'drain',
  usage: '',
  summary: 'cluster mode: hand this node\'s partitions to the other nodes and wait until it serves none, printing progress; then stop it',
  example: 'agentctl --socket /srv/agentd-b/run/agentd.sock drain && systemctl stop agentd',
  arity: [0, 0],
  async run({ client, json, out }: Context) {
    const done = client.drainNode();
    let finished = false;
    void done.then(() => (finished = true), () => (finished = true));
    // Progress, once a second, until the drain answers (its own errors are done's).
    for (let last = -1; !finished; ) {
      const served = (await client.stats().catch(() => null))?.cluster?.served_partitions;
      if (served !== undefined && served !== last && !finished) out.note(`draining: ${served} partitions still served here`);
      last = served ?? last;
      await Promise.race([done.catch(() => undefined), new Promise((r) => setTimeout(r, 1000))]);
    }
    const r = await done;
    if (json) return out.json(r);
    out.line(`drained node ${r.node}: ${r.released} partitions handed to the other nodes; it serves none and can be stopped`);
  },
};

export const daemonCommands: Command[] = [ping, stats, top, cluster, reload, drain];
