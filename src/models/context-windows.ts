/**
 * Context windows of well-known models, in tokens, for the default
 * `compact_threshold`: a conversation is compacted before a turn would send
 * more than DEFAULT_COMPACT_SHARE of its model's window. Matched by the
 * longest prefix of the model name, so dated variants (gpt-4o-2024-08-06)
 * and tags (llama3.1:8b) find their family. A model not listed gets no
 * default: compaction stays off until its agent sets `compact_threshold`.
 */
import type { AgentConfig } from '../shared/config.ts';

const WINDOWS: readonly (readonly [prefix: string, tokens: number])[] = [
  ['gpt-5', 400_000],
  ['gpt-4.1', 1_047_576],
  ['gpt-4o', 128_000],
  ['gpt-4-turbo', 128_000],
  ['gpt-4', 8_192],
  ['gpt-3.5-turbo', 16_385],
  ['o1', 200_000],
  ['o3', 200_000],
  ['o4-mini', 200_000],
  ['claude', 200_000],
  ['gemini-1.5', 1_000_000],
  ['gemini-2', 1_000_000],
  ['llama3.1', 128_000],
  ['llama3.2', 128_000],
  ['llama3.3', 128_000],
  ['llama-3.1', 128_000],
  ['llama-3.3', 128_000],
  ['qwen2.5', 32_768],
  ['qwen3', 32_768],
  ['mistral-large', 128_000],
  ['mistral', 32_768],
  ['deepseek', 64_000],
];

/** The share of the window past which a conversation is compacted: room is left for the reply and tool results. */
export const DEFAULT_COMPACT_SHARE = 0.75;

/** The model's context window, when it is a well-known one. */
export function contextWindow(model: string): number | null {
  const name = model.toLowerCase().replace(/^.*\//, ''); // "openai/gpt-4o" on a gateway
  let best: readonly [string, number] | null = null;
  for (const entry of WINDOWS) if (name.startsWith(entry[0]) && (best === null || entry[0].length > best[0].length)) best = entry;
  return best === null ? null : best[1];
}

/** The tokens of history past which a turn first compacts; 0 is off. */
export function compactThreshold(config: AgentConfig): number {
  if (config.compact_threshold !== null) return config.compact_threshold;
  if (config.model === 'echo') return 0;
  const window = contextWindow(config.model);
  return window === null ? 0 : Math.floor(window * DEFAULT_COMPACT_SHARE);
}
