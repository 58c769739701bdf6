/** The daemon: ping, stats (PROTOCOL §4.9). */
import { type Command, type Context } from '../command.ts';
import { duration } from '../output.ts';

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

export const daemonCommands: Command[] = [ping, stats];
