/** The event bus and the agent event stream: subscribe, unsubscribe, subscriptions, publish, events (PROTOCOL §4.4, §4.5). */
import type { AgentEvent } from '../../client/index.ts';
import { type Command, type Context, oneAgent, parseUint, restText } from '../command.ts';
import { clip, type Output } from '../output.ts';

const subscribe: Command = {
  name: 'subscribe',
  usage: 'SOURCE AGENT',
  summary: 'make every event published on SOURCE start a turn of AGENT (sender "event:SOURCE")',
  details: 'Every finished turn publishes "agent:NAME:done" with its answer, so agents can be chained.',
  example: 'agentctl subscribe deploy.done assistant --once',
  options: ['once'],
  arity: [2, 2],
  async run({ client, args, flags, json, out }: Context) {
    const s = await client.subscribe(args[0]!, args[1]!, flags.once === true);
    if (json) out.json(s);
    else out.line(`subscription ${s.id}: ${s.source} -> ${s.target_agent}${s.once ? ' (once)' : ''}`);
  },
};

const unsubscribe: Command = {
  name: 'unsubscribe',
  usage: 'ID',
  summary: 'remove a subscription (its id is shown by subscribe and subscriptions)',
  example: 'agentctl unsubscribe 3',
  arity: [1, 1],
  async run({ client, args, json, out }: Context) {
    const id = parseUint(args[0]!, 'ID');
    const r = await client.call('unsubscribe_event', { id });
    if (json) out.json(r);
    else out.line(`removed subscription ${id}`);
  },
};

const subscriptions: Command = {
  name: 'subscriptions',
  usage: '',
  summary: 'list the event bus\'s subscriptions',
  example: 'agentctl subscriptions',
  arity: [0, 0],
  async run({ client, json, out }: Context) {
    const r = await client.call('list_subscriptions', {});
    if (json) return out.json(r);
    if (r.subscriptions.length === 0) return out.line('no subscriptions');
    out.table([['ID', 'SOURCE', 'AGENT', 'ONCE'], ...r.subscriptions.map((s) => [String(s.id), s.source, s.target_agent, s.once ? 'once' : ''])]);
  },
};

const publish: Command = {
  name: 'publish',
  usage: 'SOURCE [PAYLOAD...]',
  summary: 'publish an event; the payload becomes the user message of the turns it fires',
  example: 'agentctl publish deploy.done "build 42 is live"',
  arity: [1, Infinity],
  async run({ client, args, json, out }: Context) {
    const r = await client.call('publish_event', { source: args[0]!, payload: restText(args, 1) });
    if (json) out.json(r);
    else out.line(`fired ${r.fired} subscription${r.fired === 1 ? '' : 's'}`);
  },
};

/** Turns agent events into lines: text and thinking deltas are joined per segment. */
class EventPrinter {
  readonly #text = new Map<string, string>();

  constructor(readonly out: Output) {}

  event(ev: AgentEvent): void {
    const key = `${ev.agent}\0${ev.sender}\0${ev.correlation_id ?? ''}\0${ev.ephemeral}`;
    switch (ev.type) {
      case 'text_delta':
      case 'thinking_delta':
        this.#text.set(key, (this.#text.get(key) ?? '') + ev.content);
        return;
      case 'text_start':
      case 'thinking_start':
      case 'tools_complete':
        return;
      case 'text_end':
      case 'thinking_end':
        this.#line(ev, ev.type === 'text_end' ? 'text' : 'thinking', JSON.stringify(clip(this.#text.get(key) ?? '', 200)));
        this.#text.delete(key);
        return;
      default:
        this.#line(ev, ev.type, this.#detail(ev));
    }
  }

  #detail(ev: AgentEvent): string {
    if (ev.type === 'tool_start') return (ev.tool_calls ?? []).map((c) => `${c.name} ${clip(c.arguments, 80)}`).join('; ');
    if (ev.type === 'tool_result') return `${ev.tool_is_error === true ? 'error' : 'ok'} ${JSON.stringify(clip(ev.tool_output ?? '', 80))}`;
    if (ev.type === 'done') return ev.content === '' ? this.out.out.dim('(no text)') : `${ev.content.length} chars`;
    return ev.content; // lagged: "<n> events dropped"
  }

  #line(ev: AgentEvent, what: string, detail: string): void {
    const s = this.out.out;
    const time = ev.timestamp.slice(11, 23);
    const who = `${ev.agent}/${ev.sender}${ev.ephemeral ? ' (ephemeral)' : ''}${ev.correlation_id !== undefined ? ` #${ev.correlation_id}` : ''}`;
    this.out.line(`${s.dim(time)} ${s.bold(who)} ${what === 'done' ? s.green(what) : what}${detail !== '' ? ` ${detail}` : ''}`);
  }
}

const events: Command = {
  name: 'events',
  usage: '',
  summary: 'watch what agents do, one line per turn event (chunk text joined), until Ctrl-C',
  details: 'Shows every turn in the daemon: streamed, sent, ephemeral or fired by the event bus.\n"watching agent events" on stderr means the watch is in place. --json prints every event, its name as "type" (as stream --json prints its events).',
  example: 'agentctl events --agent assistant',
  options: ['agent'],
  arity: [0, 0],
  async run({ client, flags, json, out }: Context) {
    const it = client.events(oneAgent(flags).agent);
    const printer = new EventPrinter(out);
    const stop = new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    const tail = (async () => {
      for await (const ev of it) {
        if (json) out.json(ev);
        else printer.event(ev);
      }
    })();
    await client.ping(); // answered once the daemon has the watch in place
    out.note(out.err.dim(`watching agent events${flags.agent !== undefined ? ` of ${flags.agent[0]}` : ''} (Ctrl-C to stop)`));
    await Promise.race([tail, stop]);
  },
};

export const busCommands: Command[] = [subscribe, unsubscribe, subscriptions, publish, events];
