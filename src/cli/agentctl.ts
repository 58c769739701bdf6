/**
 * `agentctl`: talk to a running agentd.
 *
 *   agentctl [--socket PATH | --tcp HOST:PORT] [--token T] [--home DIR] COMMAND ...
 *     (over TCP without --token or AGENTD_TOKEN, the token is read from HOME/token)
 *     ping                         round trip, prints the time
 *     stats                        daemon statistics (JSON)
 *     stream AGENT TEXT [--sender S] [--guest G] [--ephemeral]   prints tokens as they arrive
 *     send AGENT TEXT [--sender S] prints the reply
 *     kill AGENT [--sender S]      cancels the pair's running and queued turns
 *     events [--agent A]           tails the agent event stream
 *     publish SOURCE PAYLOAD       publishes an event on the bus
 *     subscribe SOURCE AGENT [--once]   fires AGENT's turns on SOURCE
 *     unsubscribe ID
 *     subscriptions                lists the bus's subscriptions
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { AgentdClient, AgentdError, type ConnectOptions } from '../client/index.ts';

const USAGE = `usage: agentctl [--socket PATH | --tcp HOST:PORT] [--token T] [--home DIR] COMMAND
commands:
  ping
  stats
  stream AGENT TEXT [--sender S] [--guest G] [--ephemeral]
  send AGENT TEXT [--sender S]
  kill AGENT [--sender S]
  events [--agent A]
  publish SOURCE PAYLOAD
  subscribe SOURCE AGENT [--once]
  unsubscribe ID
  subscriptions`;

function die(message: string, code = 1): never {
  process.stderr.write(`agentctl: ${message}\n`);
  process.exit(code);
}

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: {
        socket: { type: 'string' },
        tcp: { type: 'string' },
        token: { type: 'string' },
        home: { type: 'string' },
        sender: { type: 'string' },
        guest: { type: 'string' },
        ephemeral: { type: 'boolean' },
        agent: { type: 'string' },
        once: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    die(`${(err as Error).message}\n${USAGE}`, 2);
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (values.help || command === undefined) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(command === undefined && !values.help ? 2 : 0);
  }

  const opts: ConnectOptions = {};
  const home = values.home ?? process.env.AGENTD_HOME ?? join(homedir(), '.agentd');
  if (values.tcp !== undefined) {
    const m = /^(.*):(\d+)$/.exec(values.tcp);
    if (m === null) die(`--tcp must be HOST:PORT, got "${values.tcp}"`, 2);
    opts.host = m[1]!.replace(/^\[|\]$/g, '');
    opts.port = Number(m[2]);
    opts.home = home; // the daemon's token file, used when no token is given
  } else {
    opts.path = values.socket ?? join(home, 'run', 'agentd.sock');
  }
  const token = values.token || process.env.AGENTD_TOKEN || undefined; // empty means unset, as for agentd
  if (token !== undefined && values.tcp !== undefined) opts.token = token;

  const need = (n: number, what: string): void => {
    if (rest.length < n) die(`${command} needs ${what}\n${USAGE}`, 2);
  };
  const sender = values.sender !== undefined ? { sender: values.sender } : {};

  const client = await AgentdClient.connect(opts);
  try {
    switch (command) {
      case 'ping': {
        const t0 = process.hrtime.bigint();
        await client.ping();
        const us = Number(process.hrtime.bigint() - t0) / 1000;
        process.stdout.write(`pong in ${us.toFixed(0)} µs\n`);
        break;
      }
      case 'stats':
        process.stdout.write(`${JSON.stringify(await client.stats(), null, 2)}\n`);
        break;
      case 'stream': {
        need(2, 'AGENT and TEXT');
        const turnOpts = { ...sender, ...(values.guest ? { guest: values.guest } : {}), ...(values.ephemeral ? { ephemeral: true } : {}) };
        for await (const ev of client.stream(rest[0]!, rest.slice(1).join(' '), turnOpts)) {
          if (ev.type === 'chunk') process.stdout.write(ev.content);
          else if (ev.type === 'tool_start') for (const c of ev.calls) process.stderr.write(`\n[tool ${c.name} ${c.arguments}]\n`);
          else if (ev.type === 'tool_result') process.stderr.write(`[result${ev.is_error ? ' (error)' : ''}: ${ev.output}]\n`);
          else if (ev.type === 'end') {
            process.stdout.write('\n');
            if (ev.error !== '') die(`turn ended (${ev.stop_reason}): ${ev.error}`);
          }
        }
        break;
      }
      case 'send': {
        need(2, 'AGENT and TEXT');
        const r = await client.send(rest[0]!, rest.slice(1).join(' '), sender);
        process.stdout.write(`${r.content}\n`);
        break;
      }
      case 'kill':
        need(1, 'AGENT');
        await client.kill(rest[0]!, values.sender);
        break;
      case 'events': {
        const stop = new Promise<void>((resolve) => process.once('SIGINT', resolve));
        const tail = (async () => {
          for await (const ev of client.events(values.agent)) {
            const extra = ev.tool_calls ? ` ${JSON.stringify(ev.tool_calls)}` : ev.tool_output !== undefined ? ` ${ev.tool_output}` : '';
            process.stdout.write(`${ev.timestamp} ${ev.agent} ${ev.sender} ${ev.kind} ${JSON.stringify(ev.content)}${extra}\n`);
          }
        })();
        await Promise.race([tail, stop]);
        break;
      }
      case 'publish': {
        need(2, 'SOURCE and PAYLOAD');
        const fired = await client.publish(rest[0]!, rest.slice(1).join(' '));
        process.stdout.write(`fired ${fired}\n`);
        break;
      }
      case 'subscribe': {
        need(2, 'SOURCE and AGENT');
        const s = await client.subscribe(rest[0]!, rest[1]!, values.once ?? false);
        process.stdout.write(`subscription ${s.id}: ${s.source} -> ${s.target_agent}${s.once ? ' (once)' : ''}\n`);
        break;
      }
      case 'unsubscribe': {
        need(1, 'ID');
        await client.unsubscribe(Number(rest[0]));
        break;
      }
      case 'subscriptions':
        for (const s of await client.subscriptions()) process.stdout.write(`${s.id}\t${s.source}\t${s.target_agent}${s.once ? '\tonce' : ''}\n`);
        break;
      default:
        die(`unknown command "${command}"\n${USAGE}`, 2);
    }
  } catch (err) {
    if (err instanceof AgentdError) die(`error ${err.code}: ${err.message}`);
    throw err;
  } finally {
    await client.close();
  }
}

main().catch((err: unknown) => die(err instanceof Error ? err.message : String(err)));
