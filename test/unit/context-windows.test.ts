import { describe, expect, it } from 'vitest';
import { compactThreshold, contextWindow } from '../../src/models/context-windows.ts';
import { validateAgentConfig } from '../../src/shared/config-checks.ts';

const agent = (raw: Record<string, unknown>) => validateAgentConfig(raw, 'test', 'a', ['p']);

describe('default compact_threshold', () => {
  it('finds a family by its longest prefix, through gateways and tags', () => {
    expect(contextWindow('gpt-4o-2024-08-06')).toBe(128_000);
    expect(contextWindow('gpt-4')).toBe(8_192);
    expect(contextWindow('gpt-4.1-mini')).toBe(1_047_576);
    expect(contextWindow('openai/gpt-4o')).toBe(128_000);
    expect(contextWindow('llama3.1:8b')).toBe(128_000);
    expect(contextWindow('some-private-model')).toBeNull();
  });

  it('is 75% of a known window, off for echo and unknown models, and what the agent sets otherwise', () => {
    expect(compactThreshold(agent({ model: 'gpt-4o', provider: 'p' }))).toBe(96_000);
    expect(compactThreshold(agent({}))).toBe(0);
    expect(compactThreshold(agent({ model: 'house-model', provider: 'p' }))).toBe(0);
    expect(compactThreshold(agent({ model: 'house-model', provider: 'p', compact_threshold: 5000 }))).toBe(5000);
    expect(compactThreshold(agent({ model: 'gpt-4o', provider: 'p', compact_threshold: 0 }))).toBe(0);
  });
});
