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
  /** A built checkout of another commit (`--baseline DIR`) that suites able to compare run beside this one. */
  baseline?: string;
}

export type Target = string | { host: string; port: number };

export const target = (s: System, t: 'unix' | 'tcp'): Target => (t === 'unix' ? s.proc.unix : s.proc.tcp!);

/**
 * One-word echo turns. Requests of one client cycle through 64 senders, so up
 * to 64 in flight on one connection are 64 conversations running in parallel
 * (one sender would queue them all in one FIFO); senders rotate every 100
 * turns each, so histories stay short.
 */
export function turnBody(slot: string, agent = 'assistant'): (i: number) => unknown {
  return (i) => ({ stream: { agent, content: 'hello', sender: `${slot}-${i % 64}-${Math.floor(i / 6400)}` } });
}

export const PING = { ping: {} };
