/**
 * Compaction: the agent's model summarizes the conversation. The summary
 * replaces the history the next turn sees; what it summarized stays stored
 * and searchable.
 */
import type { AgentConfig } from '../../shared/config.ts';
import type { Cancellation } from './cancellation.ts';
import type { Message, Model } from '../../models/types.ts';
import { GENERIC_REDACTOR } from '../../shared/redact.ts';
import { callMeter, callStatus, type CompactionTrigger } from '../call-meter.ts';

export const DEFAULT_COMPACT_PROMPT =
  'Summarize the conversation so far in a few sentences. Keep names, facts, decisions and open questions; drop pleasantries.';

/** The model's summary of `history`, counted in the metrics as a compaction `trigger` asked for. */
export async function summarize(model: Model, agent: AgentConfig, history: readonly Message[], prompt: string | null, cancel: Cancellation, trigger: CompactionTrigger): Promise<string> {
  const start = performance.now();
  let failure: unknown;
  try {
    return await summarizeOnce(model, agent, history, prompt, cancel);
  } catch (err) {
    failure = err;
    throw err;
  } finally {
    callMeter.compaction(trigger, callStatus(failure, cancel.aborted), performance.now() - start);
  }
}

async function summarizeOnce(model: Model, agent: AgentConfig, history: readonly Message[], prompt: string | null, cancel: Cancellation): Promise<string> {
  let text = '';
  const stream = model.stream({
    history,
    messages: [{ role: 'user', content: prompt || DEFAULT_COMPACT_PROMPT }],
    tools: [],
    toolChoice: null,
    agent,
    cancel,
    purpose: 'compact',
  });
  try {
    for await (const ev of stream) {
      cancel.throwIfAborted();
      if (ev.type === 'text') text += ev.delta;
    }
  } catch (err) {
    // The error becomes the `compact` reply: no secret the provider echoed may reach it.
    throw (model.redactor ?? GENERIC_REDACTOR).error(err);
  }
  if (text.trim() === '') throw new Error('the model returned an empty summary');
  return text;
}
