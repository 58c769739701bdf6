/**
 * The wire contract of conversation export and import (PROTOCOL §4.15):
 * `export_conversations` pages through the stored conversations as records
 * (a conversation, then its messages), which `agentctl export` writes one per
 * JSON line; `import_messages` writes one batch of a pair's messages at their
 * positions, skipping those already stored, so importing twice adds nothing.
 */
import type { ToolCall } from '../protocol.ts';

/** A stored message as export carries it and import takes it. */
export interface TransferMessage {
  role: 'user' | 'assistant' | 'tool';
  content: string;
  /** The agent that wrote it, when it was a guest. */
  agent?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  /** The tool's name, on a tool message. */
  name?: string;
  is_error?: boolean;
  /** On the record of a turn lost to a stalled worker thread: `stalled`. */
  stop_reason?: string;
}

/** A conversation's row: it comes before the conversation's messages. */
export interface ExportConversationRecord {
  type: 'conversation';
  agent: string;
  sender: string;
  title: string;
  created_at: string;
  updated_at: string;
  /** The latest compaction's summary, which the model sees instead of messages [0, summary_upto); null if never compacted. */
  summary: string | null;
  summary_upto: number;
  message_count: number;
}

/** One message, at its position `idx` (0-based) in its conversation. */
export interface ExportMessageRecord {
  type: 'message';
  agent: string;
  sender: string;
  idx: number;
  created_at: string;
  message: TransferMessage;
}

export type ExportRecord = ExportConversationRecord | ExportMessageRecord;

export interface ExportArgs {
  agent?: string;
  sender?: string;
  /** The `next` of the page before; absent: from the start. */
  after?: string;
  /** Records per page, 1-1000 (default 500). */
  limit?: number;
}

export interface ExportPage {
  records: ExportRecord[];
  /** Pass as `after` for the next page; null: this was the last. */
  next: string | null;
}

export interface ImportArgs {
  agent: string;
  sender: string;
  /** The position of `messages[0]` in the conversation. */
  from: number;
  messages: TransferMessage[];
  /** The conversation's title, for a conversation this creates (default: its first user message). */
  title?: string;
  /** A compaction summary to set once these messages are stored (with `summary_upto`). */
  summary?: string;
  summary_upto?: number;
}

export interface ImportReply {
  /** Messages written by this request. */
  imported: number;
  /** Messages already stored at their positions (a re-import), not written again. */
  skipped: number;
}

export interface TransferOperations {
  export_conversations: { args: ExportArgs; variant: 'export_page'; reply: ExportPage };
  import_messages: { args: ImportArgs; variant: 'imported'; reply: ImportReply };
}
