/** Conversation export and import between daemons and stores (PROTOCOL §4.15; docs/operations.md). */
import { createReadStream } from 'node:fs';
import { type Command, type Context, oneAgent, UsageError } from '../command.ts';
import type { Output } from '../output.ts';
import { exportTo, Importer, type TransferCounts } from '../transfer-file.ts';

/** At most one progress line a second on stderr, and always the last. */
function progressLine(out: Output, verb: string): (c: TransferCounts, final?: boolean) => void {
  let last = 0;
  return (c, final = false) => {
    const now = Date.now();
    if (!final && now - last < 1000) return;
    last = now;
    const skipped = c.skipped > 0 ? `, ${c.skipped} already there` : '';
    out.note(`${verb} ${c.conversations} conversations, ${c.messages} messages${skipped}${final ? ': done' : ''}`);
  };
}

const exportCommand: Command = {
  name: 'export',
  usage: '',
  summary: 'write stored conversations (messages, summaries) to stdout as JSON lines, for agentctl import; progress on stderr',
  details: 'The first line is a header {"agentd_export": 1, ...}; then each conversation\'s record, followed by its messages in order. See docs/operations.md, "Export and import".',
  example: 'agentctl export --agent assistant > assistant.jsonl',
  options: ['agent', 'sender'],
  arity: [0, 0],
  async run({ client, flags, out }: Context) {
    const filter = { ...oneAgent(flags), ...(flags.sender === undefined ? {} : { sender: flags.sender }) };
    const progress = progressLine(out, 'exported');
    progress(await exportTo(client, out.stdout, filter, progress), true);
  },
};

const importCommand: Command = {
  name: 'import',
  usage: 'FILE',
  summary: 'write the conversations of an agentctl export file into this daemon\'s store; importing twice adds nothing',
  details: 'Reads FILE (- for stdin) line by line. The agents must exist here. A malformed line stops the import, naming the line; the batches before it are written whole, its own is not, and importing the fixed file again goes on where it stopped.',
  example: 'agentctl import assistant.jsonl',
  arity: [1, 1],
  async run({ client, args, json, out }: Context) {
    const file = args[0]!;
    const input = file === '-' ? process.stdin : createReadStream(file);
    const opened = new Promise<void>((resolve, reject) => {
      if (file === '-') return resolve();
      input.once('open', () => resolve());
      input.once('error', (err: Error) => reject(new UsageError(`cannot read ${file}: ${err.message}`)));
    });
    await opened;
    const progress = progressLine(out, 'imported');
    const counts = await new Importer(client, progress).run(input);
    progress(counts, true);
    if (json) out.json(counts);
  },
};

export const transferCommands: Command[] = [exportCommand, importCommand];
