/** The wire contract of conversations and search (PROTOCOL §4.3). */
import type { Empty } from './common.ts';
import type { PairArgs } from './turns.ts';

export interface HistoryMessage {
  role: 'user' | 'assistant' | 'tool';
  content: string;
  /** Present only on messages a guest wrote. */
  agent?: string;
  /** Present only on the record of a turn lost to a stalled worker thread (PROTOCOL §6): `stalled`. */
  stop_reason?: string;
}

export interface ConversationHistory {
  agent: string;
  sender: string;
  title: string;
  messages: HistoryMessage[];
}

export interface ConversationFilter {
  agent?: string;
  sender?: string;
}

export interface ConversationSummary {
  agent: string;
  sender: string;
  title: string;
  message_count: number;
  created_at: string;
  updated_at: string;
}

export interface ActiveConversation {
  agent: string;
  sender: string;
  message_count: number;
  alive_secs: number;
  title: string;
  running: boolean;
  queued: number;
  /** Approximate bytes its history holds in memory (counted against `memory_bytes`). */
  memory_bytes: number;
}

export interface SearchArgs {
  query: string;
  limit?: number;
  context_before?: number;
  context_after?: number;
  agent?: string;
  sender?: string;
}

export interface SearchWindowMessage {
  role: 'user' | 'assistant' | 'tool';
  msg_idx: number;
  snippet: string;
  truncated: boolean;
  tool_name: string;
}

export interface SessionHit {
  agent: string;
  sender: string;
  title: string;
  msg_idx: number;
  score: number;
  created_at: string;
  updated_at: string;
  window: SearchWindowMessage[];
}
export interface ConversationOperations {
  get_conversation_history: { args: PairArgs; variant: 'conversation_history'; reply: ConversationHistory };
  delete_conversation: { args: PairArgs; variant: 'pong'; reply: Empty };
  list_conversations: { args: ConversationFilter; variant: 'conversation_list'; reply: { conversations: ConversationSummary[] } };
  list_active_conversations: { args: ConversationFilter; variant: 'active_conversations'; reply: { conversations: ActiveConversation[] } };
  search_sessions: { args: SearchArgs; variant: 'session_hits'; reply: { hits: SessionHit[] } };
}
