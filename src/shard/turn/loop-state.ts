/**
 * How far a turn's agent loop has come: what a waiting run stores
 * (runs/waiting-runs.ts) so that, after a restart, the loop resumes where
 * it waited. Plain data, kept as JSON in the store.
 */
import type { ToolCall, Usage } from '../../shared/protocol.ts';
import type { Message } from '../../models/types.ts';
import type { ToolResult } from '../tools/tools.ts';

/** A tool step under way: the model's text and calls, and the results in so far (in the order they came). */
export interface ToolStep {
  text: string;
  calls: ToolCall[];
  results: ToolResult[];
}

export interface LoopState {
  /** The model step under way (0 for the first). */
  iteration: number;
  /** Messages the turn completed so far (the history gets them, after the user message, when the turn ends). */
  produced: Message[];
  usage: Usage;
  /** The text of the last model step that produced any. */
  finalText: string;
  /** The tool step under way; null between steps. */
  step: ToolStep | null;
}

/** The result a call gets that was running (not waiting) when its daemon stopped: whether it ran to the end is unknown. */
export const INTERRUPTED = 'interrupted: the daemon stopped while this tool call ran; whether it finished is unknown';
