import { describe, expect, it } from 'vitest';
import type { Logger } from '../../src/shared/log.ts';
import { LimitLog } from '../../src/main/limit-log.ts';

function recorder(): { log: Logger; lines: [Record<string, unknown>, string][] } {
  const lines: [Record<string, unknown>, string][] = [];
  return { lines, log: { info: (fields: Record<string, unknown>, msg: string) => lines.push([fields, msg]) } as unknown as Logger };
}

describe('LimitLog', () => {
  it('logs the first hit of each limit, then at most one per interval with the hits it left out', () => {
    let now = 0;
    const { log, lines } = recorder();
    const limits = new LimitLog(log, 1_000, () => now);
    limits.hit('max_agents', 'too many agents');
    limits.hit('max_agents', 'too many agents');
    limits.hit('max_agents', 'too many agents');
    limits.hit('max_observers', 'too many event streams');
    expect(lines.map(([f, m]) => [f.limit, m])).toEqual([['max_agents', 'limit reached (429): too many agents'], ['max_observers', 'limit reached (429): too many event streams']]);
    now = 1_000;
    limits.hit('max_agents', 'too many agents', { connection: 7 });
    expect(lines[2]![0]).toEqual({ limit: 'max_agents', connection: 7, more_hits_not_logged: 2 });
  });
});
