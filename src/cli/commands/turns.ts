/** Turns: stream, send, kill, compact (PROTOCOL §4.1). */
import { AgentdError, Code, type StreamEvent, type StreamArgs, type OnBusy } from '../../client/index.ts';
import { turnFailure, TurnFailedError } from '../failure.ts';
import { type Command, type Context, type Flags, pairLabel, restText, senderOf, UsageError } from '../command.ts';
import { clip, type Output } from '../output.ts';

const ON_BUSY: readonly string[] = ['enqueue', 'reject', 'interrupt'];

function turnOptions(flags: Flags): Omit<StreamArgs, 'agent' | 'content'> {
  const onBusy = flags['on-busy'];
  if (onBusy !== undefined && !ON_BUSY.includes(onBusy)) throw new UsageError(`--on-busy must be enqueue, reject or interrupt, got "${onBusy}"`);
  return {
    ...senderOf(flags),
    ...(flags.guest !== undefined ? { guest: flags.guest } : {}),
    ...(flags.ephemeral === true ? { ephemeral: true } : {}),
    ...(onBusy !== undefined ? { on_busy: onBusy as OnBusy } : {}),
    ...(flags.detach === true ? { detach: true } : {}),
  };
}

/** Renders a streamed turn: the answer on stdout, thinking and tools apart on stderr. */
export class TurnPrinter {
  #atLineStart = true;
  #thinkingOpen = false;
  readonly #names = new Map<string, string>();

  constructor(readonly o: Output) {}

  event(ev: StreamEvent): void {
    const e = this.o.err;
    switch (ev.type) {
      case 'chunk':
        this.o.write(ev.content);
        if (ev.content !== '') this.#atLineStart = ev.content.endsWith('\n');
        break;
      case 'thinking_start':
        this.o.stderr.write(e.dim('thinking: '));
        this.#thinkingOpen = true;
        break;
      case 'thinking':
        this.o.stderr.write(e.dim(ev.content));
        break;
      case 'thinking_end':
        this.o.stderr.write('\n');
        this.#thinkingOpen = false;
        break;
      case 'tool_start':
        for (const c of ev.calls) {
          this.#names.set(c.id, c.name);
          this.o.note(e.cyan(`→ ${c.name} ${clip(c.arguments, 200)}`));
        }
        break;
      case 'tool_result': {
        const name = this.#names.get(ev.call_id) ?? ev.call_id;
        const text = `← ${name}${ev.is_error ? ' failed' : ''} (${ev.duration_ms} ms): ${clip(ev.output, 200)}`;
        this.o.note(ev.is_error ? e.red(text) : e.dim(text));
        break;
      }
      case 'end':
        this.#end(ev);
        break;
      default:
        break; // start, text_start/end, context_usage, tools_complete: nothing to show
    }
  }

  #end(ev: Extract<StreamEvent, { type: 'end' }>): void {
    if (this.#thinkingOpen) this.o.stderr.write('\n');
    if (!this.#atLineStart) this.o.line();
    if (ev.error !== '') throw turnFailure(ev.stop_reason, ev.error);
  }
}

const stream: Command = {
  name: 'stream',
  usage: 'AGENT TEXT...',
  summary: 'run a turn and print the answer as it arrives',
  details: 'The answer goes to stdout. Thinking (dim, after "thinking: ") and tool calls go to stderr, so\n`agentctl stream a hi > answer.txt` keeps only the answer. A failed or cancelled turn exits 4.\nWith --json: one JSON line per stream event ({"type": "chunk", "content": ..., "seq": ...}).\nWith --detach the turn goes on if the connection drops; `agentctl join RUN_ID` follows it again.',
  example: 'agentctl stream assistant "summarize the README" --sender alice',
  options: ['sender', 'guest', 'ephemeral', 'on-busy', 'detach'],
  arity: [2, Infinity],
  async run({ client, args, flags, json, out }: Context) {
    const printer = new TurnPrinter(out);
    for await (const ev of client.stream(args[0]!, restText(args, 1), turnOptions(flags))) {
      if (!json) printer.event(ev);
      else {
        out.json(ev);
        if (ev.type === 'end' && ev.error !== '') throw turnFailure(ev.stop_reason, ev.error);
      }
    }
  },
};

const send: Command = {
  name: 'send',
  usage: 'AGENT TEXT...',
  summary: 'run a turn and print the final answer once it is done',
  details: 'A turn that fails (a provider error) or is cancelled exits 4; a refused request (unknown agent, busy) exits 1.',
  example: 'agentctl send assistant "what changed today?"',
  options: ['sender', 'on-busy', 'detach'],
  arity: [2, Infinity],
  async run({ client, args, flags, json, out }: Context) {
    const { guest: _g, ephemeral: _e, ...opts } = turnOptions(flags);
    const r = await client.send(args[0]!, restText(args, 1), opts).catch((err: unknown) => {
      // The turn ran and failed (500) or was cancelled (499): a failed turn, not a refusal.
      if (err instanceof AgentdError && (err.code === Code.Internal || err.code === Code.Cancelled)) throw new TurnFailedError(err.code, `turn ${err.code === Code.Cancelled ? 'cancelled' : 'failed'}: ${err.message}`);
      throw err;
    });
    if (json) out.json(r);
    else out.line(r.content);
  },
};

const kill: Command = {
  name: 'kill',
  usage: 'AGENT',
  summary: 'cancel the conversation\'s running turn and everything queued behind it',
  example: 'agentctl kill assistant --sender alice',
  options: ['sender'],
  arity: [1, 1],
  async run({ client, args, flags, json, out }: Context) {
    const r = await client.call('kill', { agent: args[0]!, ...senderOf(flags) });
    if (json) out.json(r);
    else out.line(`cancelled the running and queued turns of ${pairLabel(args[0]!, flags.sender)} (if any)`);
  },
};

const compact: Command = {
  name: 'compact',
  usage: 'AGENT',
  summary: 'summarize a conversation; the summary replaces the history the model sees next',
  details: 'Stored messages are kept (history still shows them) and the summary becomes searchable.',
  example: 'agentctl compact assistant --prompt "Keep only the decisions."',
  options: ['sender', 'prompt'],
  arity: [1, 1],
  async run({ client, args, flags, json, out }: Context) {
    const r = await client.call('compact', { agent: args[0]!, ...senderOf(flags), ...(flags.prompt !== undefined ? { prompt: flags.prompt } : {}) });
    if (json) out.json(r);
    else out.line(`${out.out.bold('summary:')} ${r.summary}`);
  },
};

export const turnCommands: Command[] = [stream, send, kill, compact];
