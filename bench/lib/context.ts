/** What every suite gets: the report, the run's size, and the shared systems under test. */
import type { Report } from './report.ts';
import type { Proc } from './processes.ts';

export interface System {
  name: 'agentd' | 'floor' | 'redis';
  proc: Proc;
}

export interface BenchContext {
  report: Report;
  quick: boolean;
  workers: number;
  /** agentd (echo agent `assistant`), the floor server and, when installed, Redis. */
  systems: System[];
  sizes: { latencyN: number; rateMs: number; warmupMs: number };
}

export type Target = string | { host: string; port: number };

export const target = (s: System, t: 'unix' | 'tcp'): Target => (t === 'unix' ? s.proc.unix : s.proc.tcp!);

/** One-word echo turns, a distinct sender per in-flight slot, rotated so histories stay short. */
export function turnBody(slot: string, agent = 'assistant'): () => unknown {
  let n = 0;
  return () => ({ stream: { agent, content: 'hello', sender: `${slot}-${Math.floor(n++ / 100)}` } });
}

export const PING = { ping: {} };
