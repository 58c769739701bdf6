/**
 * Where one big request's memory peaks (issue 11: a request of B bytes
 * should cost about 4 x B at its peak).
 *
 *   node --import tsx bench/big-stream-memory.ts [--mib 16] [--runs 3]
 *
 * Each run starts a daemon (2 shards, echo model, SQLite) on a fresh home,
 * sends one small turn, then streams one request of `--mib` MiB of two-byte
 * words and reads the answer whole. It prints how far the daemon's peak
 * resident memory (VmHWM, all threads) rose above where it stood just before
 * the request (the peak is reset there first), over the request size, three times:
 * when the client has read `end` (the turn, including its commit), once the
 * storage threads have indexed the two messages for search (2 s later), and
 * after one `search_sessions` that matches them. Runs of one build spread by
 * about 3x (where the collectors run), so read several.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as pause } from 'node:timers/promises';
import { AgentdClient } from '../src/client/index.ts';

const { values } = parseArgs({ options: { mib: { type: 'string', default: '16' }, runs: { type: 'string', default: '3' } } });
const MIB = 1024 * 1024;
const size = Number(values.mib) * MIB;
const AGENTD = resolve(import.meta.dirname, '..', 'bin', 'agentd.mjs');

const status = (pid: number, field: string): number => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
const peak = (pid: number): number => status(pid, 'VmHWM');
/** Resets the peak to where memory stands now (Linux clear_refs 5) and returns that: an earlier, higher peak (start-up) would hide growth. */
function resetPeak(pid: number): number {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
  return status(pid, 'VmRSS');
}

async function run(): Promise<{ atEnd: number; indexed: number; searched: number }> {
  const home = mkdtempSync(join(tmpdir(), 'agentd-bigmem-'));
  writeFileSync(join(home, 'agentd.json'), JSON.stringify({ max_body_bytes: size + 1024, agents: { assistant: { model: 'echo' } } }));
  const proc = spawn(process.execPath, [AGENTD, '--home', home, '--workers', '2', '--tcp', 'off'], { env: { ...process.env, AGENTD_HOME: home }, stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await new Promise<void>((ready, fail) => {
      let out = '';
      proc.stdout.on('data', (d: Buffer) => (out += d.toString()).includes(' ready: ') && ready());
      proc.once('exit', (code) => fail(new Error(`agentd exited with ${code}`)));
    });
    const c = await AgentdClient.connect({ path: join(home, 'run', 'agentd.sock') });
    await c.send('assistant', 'warm up', { sender: 'warm' });
    const before = resetPeak(proc.pid!);
    const content = 'w '.repeat(size / 2);
    let text = 0;
    for await (const ev of c.stream('assistant', content, { sender: 'big' })) if (ev.type === 'chunk') text += ev.content.length;
    if (text !== content.length) throw new Error(`the answer came back with ${text} of ${content.length} characters`);
    const atEnd = peak(proc.pid!) - before;
    // The storage threads index new messages on a 50 ms timer: two seconds is ample (a bench, not a test).
    await pause(2_000);
    const indexed = peak(proc.pid!) - before;
    await c.request('search_sessions', { query: 'w' });
    const searched = peak(proc.pid!) - before;
    await c.close();
    return { atEnd: atEnd / size, indexed: indexed / size, searched: searched / size };
  } finally {
    proc.kill('SIGKILL');
    rmSync(home, { recursive: true, force: true });
  }
}

console.log(`one ${values.mib} MiB stream; VmHWM growth / request size`);
for (let i = 0; i < Number(values.runs); i++) {
  const r = await run();
  console.log(`run ${i + 1}: at end ${r.atEnd.toFixed(2)}x, once indexed ${r.indexed.toFixed(2)}x, after one search ${r.searched.toFixed(2)}x`);
}
