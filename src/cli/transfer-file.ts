/**
 * The export file (docs/operations.md, "Export and import"): JSON lines, the
 * first a header `{"agentd_export": 1, ...}`, then each conversation's record
 * followed by its messages' records in order (PROTOCOL §4.15). Export writes
 * it page by page; import reads it line by line (never the whole file) and
 * sends each conversation's messages in batches, each checked whole before it
 * is sent, so a malformed line stops the import before its batch is written.
 */
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { once } from 'node:events';
import type { AgentdClient } from '../client/index.ts';
import type { ExportConversationRecord, ImportArgs, TransferMessage } from '../shared/wire/transfer.ts';
import { VERSION } from '../shared/version.ts';
import { AgentdError } from '../client/index.ts';
import { UsageError } from './usage-error.ts';

export const EXPORT_FORMAT = 1;

/** Messages per import_messages request, and the most bytes of content one may carry (well under max_body_bytes). */
const BATCH_MESSAGES = 500;
const BATCH_BYTES = 4 * 1024 * 1024;

export interface TransferCounts {
  conversations: number;
  messages: number;
  /** Import only: messages already stored (a re-import). */
  skipped: number;
}

/** A line of the file that is not what the format says: the import stops there, naming the line (exit 2, as bad input). */
export class BadLine extends UsageError {
  constructor(
    readonly line: number,
    why: string,
  ) {
    super(`line ${line}: ${why}`);
  }
}

/** Writes the header, then every record, waiting whenever `out` is full; `progress` after each page. */
export async function exportTo(client: AgentdClient, out: Writable, filter: { agent?: string; sender?: string }, progress: (c: TransferCounts) => void): Promise<TransferCounts> {
  const counts: TransferCounts = { conversations: 0, messages: 0, skipped: 0 };
  const write = async (value: unknown): Promise<void> => {
    if (!out.write(`${JSON.stringify(value)}\n`)) await once(out, 'drain');
  };
  await write({ agentd_export: EXPORT_FORMAT, agentd_version: VERSION, exported_at: new Date().toISOString(), agent: filter.agent ?? null, sender: filter.sender ?? null });
  let after: string | undefined;
  for (;;) {
    const page = await client.exportConversations({ ...filter, ...(after === undefined ? {} : { after }) });
    for (const r of page.records) {
      await write(r);
      if (r.type === 'conversation') counts.conversations++;
      else counts.messages++;
    }
    progress(counts);
    if (page.next === null) return counts;
    after = page.next;
  }
}

/** The conversation being read: its record, and the batch of its messages not sent yet. */
interface Current {
  record: ExportConversationRecord;
  from: number;
  messages: TransferMessage[];
  /** The file's line of each message in `messages`, to name it when the daemon refuses one. */
  lines: number[];
  bytes: number;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function parseLine(text: string, line: number): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new BadLine(line, `not valid JSON (${(err as Error).message})`);
  }
  if (!isObject(v)) throw new BadLine(line, 'not a JSON object');
  return v;
}

function checkHeader(v: Record<string, unknown>): void {
  if (!('agentd_export' in v)) throw new BadLine(1, 'not an agentd export: the first line must be its header {"agentd_export": 1, ...}');
  if (v.agentd_export !== EXPORT_FORMAT) throw new BadLine(1, `export format ${JSON.stringify(v.agentd_export)} is not one this agentctl reads (it reads ${EXPORT_FORMAT})`);
}

function conversationRecord(v: Record<string, unknown>, line: number): ExportConversationRecord {
  for (const k of ['agent', 'sender', 'title'] as const) if (typeof v[k] !== 'string') throw new BadLine(line, `conversation.${k} must be a string`);
  if (v.summary !== null && typeof v.summary !== 'string') throw new BadLine(line, 'conversation.summary must be a string or null');
  if (!Number.isSafeInteger(v.summary_upto) || (v.summary_upto as number) < 0) throw new BadLine(line, 'conversation.summary_upto must be an integer >= 0');
  return v as unknown as ExportConversationRecord;
}

export class Importer {
  readonly counts: TransferCounts = { conversations: 0, messages: 0, skipped: 0 };
  #cur: Current | null = null;

  constructor(
    readonly client: AgentdClient,
    readonly progress: (c: TransferCounts) => void,
  ) {}

  /** Reads `input` to its end; throws a BadLine (or the daemon's refusal, naming the line) at the first problem. */
  async run(input: Readable): Promise<TransferCounts> {
    let line = 0;
    for await (const text of createInterface({ input, crlfDelay: Infinity })) {
      line++;
      if (line === 1) {
        checkHeader(parseLine(text, 1));
        continue;
      }
      if (text.trim() === '') continue;
      await this.#take(parseLine(text, line), line);
    }
    if (line === 0) throw new BadLine(1, 'the file is empty: an export starts with its header line');
    await this.#endConversation();
    return this.counts;
  }

  async #take(v: Record<string, unknown>, line: number): Promise<void> {
    if (v.type === 'conversation') {
      await this.#endConversation();
      const record = conversationRecord(v, line);
      this.#cur = { record, from: 0, messages: [], lines: [], bytes: 0 };
      return;
    }
    if (v.type !== 'message') throw new BadLine(line, `"type" must be "conversation" or "message", got ${JSON.stringify(v.type)}`);
    const cur = this.#cur;
    if (cur === null || v.agent !== cur.record.agent || v.sender !== cur.record.sender) {
      throw new BadLine(line, 'a message must follow its conversation\'s record (same agent and sender)');
    }
    const expected = cur.from + cur.messages.length;
    if (v.idx !== expected) throw new BadLine(line, `message idx must be ${expected} (the next position of ${cur.record.agent}/${cur.record.sender}), got ${JSON.stringify(v.idx)}`);
    if (!isObject(v.message) || typeof v.message.content !== 'string') throw new BadLine(line, 'message.message must be an object with a string "content"');
    const bytes = Buffer.byteLength(v.message.content);
    if (cur.messages.length > 0 && (cur.messages.length === BATCH_MESSAGES || cur.bytes + bytes > BATCH_BYTES)) await this.#send(false);
    cur.messages.push(v.message as unknown as TransferMessage);
    cur.lines.push(line);
    cur.bytes += bytes;
  }

  async #endConversation(): Promise<void> {
    const cur = this.#cur;
    if (cur === null) return;
    if (cur.from + cur.messages.length > 0) await this.#send(true);
    this.counts.conversations++;
    this.#cur = null;
    this.progress(this.counts);
  }

  /** Sends the batch; `last` carries the conversation's summary. A refusal naming one of its messages names that message's line. */
  async #send(last: boolean): Promise<void> {
    const cur = this.#cur!;
    const { record } = cur;
    const args: ImportArgs = { agent: record.agent, sender: record.sender, from: cur.from, messages: cur.messages, title: record.title };
    if (last && record.summary !== null && record.summary_upto > 0) Object.assign(args, { summary: record.summary, summary_upto: record.summary_upto });
    try {
      const r = await this.client.importMessages(args);
      this.counts.messages += r.imported;
      this.counts.skipped += r.skipped;
    } catch (err) {
      if (!(err instanceof AgentdError)) throw err;
      const at = /messages\[(\d+)\]/.exec(err.message);
      const lines = at === null ? `lines ${cur.lines[0] ?? '?'}-${cur.lines.at(-1) ?? '?'}` : `line ${cur.lines[Number(at[1])]}`;
      throw new AgentdError(err.code, `${lines} (${record.agent}/${record.sender}): ${err.message}`);
    }
    cur.from += cur.messages.length;
    cur.messages = [];
    cur.lines = [];
    cur.bytes = 0;
  }
}
