/**
 * Reads the `.cpuprofile` files `node --cpu-prof` writes for a daemon's main
 * thread and each worker thread, and splits their samples into the stages of
 * a turn. A sample belongs to the nearest project function on its stack (a
 * msgpackr or better-sqlite3 frame counts for the agentd code that called
 * it); samples with no project function count by where they ran (socket
 * I/O, message ports, GC, native event-loop work). Only samples inside a
 * measured window count, so start-up and warm-up are left out.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Waiting, not working: V8's idle marker, and piscina's Atomics.wait between tasks. */
const IDLE = new Set(['(idle)', 'atomicsWaitLoop']);

/**
 * Blocked in Atomics.wait for the shards' write lock (storage/sqlite/write-lock.ts):
 * a thread waiting, not using CPU, though the profiler sees it busy. Its own
 * stage, which the suite keeps out of the CPU shares.
 */
export const LOCK_WAIT = 'waiting for the write lock (wall time, not CPU)';

/** What a thread is, from the code it ran. */
export type ThreadKind = 'main' | 'shard' | 'storage' | 'writer' | 'other';

/** A stage of a turn and the rule that claims a project function for it. */
interface StageRule {
  stage: string;
  file: RegExp;
  fn?: RegExp;
}

const MAIN_RULES: StageRule[] = [
  { stage: 'main: write to the socket', file: /main\/net\/connection\.js$/, fn: /^(write|writeChunks|reply|#?flushBatch|#?flowControl|#?watchForStall|traffic)$/ },
  { stage: 'main: write to the socket', file: /shared\/codec\.js$/, fn: /^(encodeBody|encodeFrame|frameOf)$/ },
  { stage: 'main: hop to the shard (post)', file: /main\/hosts\/(shard-pool|shard-pool-parts|shard-thread)\.js$/, fn: /^(requestFor|requestForRun|requestTurn|sendFor|#?enqueue|#?flushAll|#?queueFull|#?shardOf|#?track)$/ },
  { stage: 'main: hop back (receive, fan out)', file: /main\/hosts\/(shard-pool|shard-pool-parts|shard-thread|output-returns)\.js$|main\/bus\/|main\/metrics\/|main\/turn-ledger\.js$|shared\/byte-layouts\.js$/ },
  { stage: 'main: storage pool tasks (index ticks, checkpoints)', file: /main\/hosts\/(storage-pool|storage-threads|search-lane)\.js$/ },
  { stage: 'main: read, decode, route', file: /main\/|shared\// },
];

const SHARD_RULES: StageRule[] = [
  { stage: 'shard: hop back (post)', file: /shard\/outbox\.js$/, fn: /^(flush|#?takeSections|#?takeEvents|#?sectionsBuffer|#?schedule)$/ },
  { stage: 'shard: encode frames', file: /shard\/(outbox|utf8-scratch|text-delta-body)\.js$|shared\/codec\.js$/ },
  { stage: 'shard: commit (its own, or handed to the writer thread)', file: /shard\/turn-writer\.js$|storage\/sqlite\/|threads\/writer\// },
  { stage: 'shard: hop in (receive, schedule)', file: /shard\/(shard|inbox|turn-scheduler|conversation-table|conversation|fifo|pair-gate)\.js$/ },
  { stage: 'shard: run (agent loop, model, reply)', file: /shard\/|shared\/|models\// },
];

/** Where a sample with no project function on its stack ran. */
function unattributed(kind: ThreadKind, stack: ProfileNode[]): string {
  const leaf = stack[0]!.callFrame;
  if (leaf.functionName === '(garbage collector)') return `${kind}: garbage collection`;
  if (leaf.functionName === '(program)') return `${kind}: native event loop (unattributed)`;
  for (const n of stack) {
    const url = n.callFrame.url;
    if (/stream_base_commons|node:net|internal\/net|internal\/streams/.test(url)) return `${kind}: socket I/O (node internals)`;
    if (/worker\/io|internal\/worker|per_context\/messageport/.test(url)) return `${kind}: message port (node internals)`;
  }
  return `${kind}: other (node internals, timers, microtasks)`;
}

const projectFile = (url: string): string | null => {
  const at = url.indexOf('/dist/src/');
  return at === -1 ? null : url.slice(at + '/dist/src/'.length);
};

function stageOf(kind: ThreadKind, stack: ProfileNode[]): string {
  const leaf = stack[0]!.callFrame;
  if (leaf.functionName === 'acquire' && leaf.url.endsWith('storage/sqlite/write-lock.js')) return LOCK_WAIT;
  if (kind === 'writer') return 'writer: commit (every shard\'s turns)';
  if (kind === 'storage' || kind === 'other') return `${kind} threads`;
  const rules = kind === 'main' ? MAIN_RULES : SHARD_RULES;
  for (const n of stack) {
    const file = projectFile(n.callFrame.url);
    if (file === null) continue;
    const fn = n.callFrame.functionName.replace(/^.*\./, '');
    const rule = rules.find((r) => r.file.test(file) && (r.fn === undefined || r.fn.test(fn)));
    if (rule !== undefined) return rule.stage;
    return `${kind}: ${file}`;
  }
  return unattributed(kind, stack);
}

function threadKind(p: CpuProfile, fileName: string): ThreadKind {
  // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: thread 0 is the main thread.
  if (fileName.split('.')[4] === '0') return 'main';
  const urls = p.nodes.map((n) => n.callFrame.url);
  if (urls.some((u) => u.endsWith('shard/shard.js'))) return 'shard';
  if (urls.some((u) => u.endsWith('threads/storage/storage-tasks.js'))) return 'storage';
  if (urls.some((u) => u.endsWith('threads/writer/writer-thread.js'))) return 'writer';
  return 'other';
}

/** Microseconds of CPU per stage, over every profile in `dir`, for samples between `fromUs` and `toUs` (monotonic clock). */
export function stageTimes(dir: string, fromUs: number, toUs: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
    const p = JSON.parse(readFileSync(join(dir, name), 'utf8')) as CpuProfile;
    const kind = threadKind(p, name);
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, ProfileNode>();
    for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n);
    const stageCache = new Map<number, string | null>();
    let t = p.startTime;
    for (let i = 0; i < p.samples.length; i++) {
      t += p.timeDeltas[i]!;
      // A sample's time is the gap to the next one: what the thread spent there.
      const spent = (p.timeDeltas[i + 1] ?? 0);
      if (t < fromUs || t > toUs || spent <= 0) continue;
      const id = p.samples[i]!;
      let stage = stageCache.get(id);
      if (stage === undefined) {
        const stack: ProfileNode[] = [];
        for (let n = byId.get(id); n !== undefined; n = parent.get(n.id)) stack.push(n);
        stage = IDLE.has(stack[0]!.callFrame.functionName) ? null : stageOf(kind, stack);
        stageCache.set(id, stage);
      }
      if (stage !== null) out.set(stage, (out.get(stage) ?? 0) + spent);
    }
  }
  return out;
}
