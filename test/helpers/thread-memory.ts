/**
 * Reads what test/helpers/thread-memory-probe.mjs writes: the heap in use
 * plus external memory of every thread of a test daemon, each measured
 * right after a full GC of its thread.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const PROBE = resolve(import.meta.dirname, 'thread-memory-probe.mjs');

/** The env that makes a test daemon report its threads' memory into a fresh directory (from the first heldBytes on). */
export function memoryProbeEnv(): { env: Record<string, string>; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'agentd-memprobe-'));
  return { dir, env: { AGENTD_TEST_MEMORY_PROBE: dir, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${PROBE}`.trim() } };
}

interface ThreadReport {
  seq: number;
  heapUsed: number;
  external: number;
}

function reports(dir: string): Map<string, ThreadReport> {
  const out = new Map<string, ThreadReport>();
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.json'))) {
    out.set(f, JSON.parse(readFileSync(join(dir, f), 'utf8')) as ThreadReport);
  }
  return out;
}

/**
 * Heap in use plus external memory over all threads, from reports made after
 * this call (every thread has reported anew since), so it reflects now.
 */
export async function heldBytes(dir: string): Promise<number> {
  writeFileSync(join(dir, 'measure'), '');
  const before = reports(dir);
  for (const until = Date.now() + 60_000; Date.now() < until; ) {
    await new Promise((r) => setTimeout(r, 50));
    const now = reports(dir);
    // Every thread (those that had not reported yet included) reported twice since the call.
    const fresh = now.size >= before.size && [...now].every(([f, r]) => r.seq > (before.get(f)?.seq ?? 0) + 1);
    if (fresh && now.size > 0) {
      rmSync(join(dir, 'measure')); // no full GCs between measurements
      return [...now.values()].reduce((sum, r) => sum + r.heapUsed + r.external, 0);
    }
  }
  throw new Error(`the daemon's threads stopped reporting their memory (${dir})`);
}
