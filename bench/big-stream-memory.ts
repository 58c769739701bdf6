/**
 * Where one big request's memory peaks (issue 11: a request of B bytes
 * should cost about 4 x B at its peak).
 *
 *   node --import tsx bench/big-stream-memory.ts [--mib 16] [--runs 3] [--streams 1]
 *
 * Each run starts a daemon (2 shards, echo model, SQLite) on a fresh home,
 * once through bin/agentd (under its malloc settings, bin/malloc-defaults.sh)
 * and once under glibc's malloc defaults, side by side,
 * sends one small turn, then streams `--streams` requests of `--mib` MiB of
 * two-byte words at once, each to its own conversation on its own connection,
 * and reads the answers whole. It prints how far the daemon's peak
 * resident memory (VmHWM, all threads) rose above where it stood just before
 * the request (the peak is reset there first), over the request size, three times:
 * when the client has read `end` (the turn, including its commit), once the
 * storage threads have indexed the two messages for search (2 s later), and
 * after one `search_sessions` that matches them. Under glibc's defaults runs of
 * one build spread widely (which thread frees a big block first), so read several.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as pause } from 'node:timers/promises';
import { AgentdClient } from '../src/client/index.ts';
import { withoutMallocSettings } from './lib/processes.ts';
import { peakResident as peak, resetPeak } from '../test/helpers/resident-memory.ts';

const { values } = parseArgs({ options: { mib: { type: 'string', default: '16' }, runs: { type: 'string', default: '3' }, streams: { type: 'string', default: '1' } } });
const MIB = 1024 * 1024;
const size = Number(values.mib) * MIB;
const streams = Number(values.streams);
const BIN = resolve(import.meta.dirname, '..', 'bin');
type Malloc = 'agentd' | 'glibc';

/** The daemon as bin/agentd starts it, or the same entry straight under glibc's malloc defaults. */
function startDaemon(home: string, malloc: Malloc): ChildProcess {
  const env = { ...withoutMallocSettings(process.env), AGENTD_HOME: home };
  const args = ['--home', home, '--workers', '2', '--tcp', 'off'];
  const [command, argv] = malloc === 'agentd' ? [join(BIN, 'agentd'), args] : [process.execPath, [join(BIN, 'agentd.mjs'), ...args]];
  return spawn(command, argv, { env, stdio: ['ignore', 'pipe', 'inherit'] });
}

async function run(malloc: Malloc): Promise<{ atEnd: number; indexed: number; searched: number }> {
  const home = mkdtempSync(join(tmpdir(), 'agentd-bigmem-'));
  writeFileSync(join(home, 'agentd.json'), JSON.stringify({ max_body_bytes: size + 1024, agents: { assistant: { model: 'echo' } } }));
  const proc = startDaemon(home, malloc);
  try {
    await new Promise<void>((ready, fail) => {
      let out = '';
      proc.stdout!.on('data', (d: Buffer) => (out += d.toString()).includes(' ready: ') && ready());
      proc.once('exit', (code) => fail(new Error(`agentd exited with ${code}`)));
    });
    const socket = join(home, 'run', 'agentd.sock');
    const clients = await Promise.all(Array.from({ length: streams }, () => AgentdClient.connect({ path: socket })));
    const c = clients[0]!;
    await c.send('assistant', 'warm up', { sender: 'warm' });
    const before = resetPeak(proc.pid!);
    const content = 'w '.repeat(size / 2);
    await Promise.all(clients.map(async (client, k) => {
      let text = 0;
      for await (const ev of client.stream('assistant', content, { sender: `big-${k}` })) if (ev.type === 'chunk') text += ev.content.length;
      if (text !== content.length) throw new Error(`an answer came back with ${text} of ${content.length} characters`);
    }));
    const atEnd = peak(proc.pid!) - before;
    // The storage threads index new messages on a 50 ms timer: two seconds is ample (a bench, not a test).
    await pause(2_000);
    const indexed = peak(proc.pid!) - before;
    await c.request('search_sessions', { query: 'w' });
    const searched = peak(proc.pid!) - before;
    await Promise.all(clients.map((client) => client.close()));
    const requested = size * streams;
    return { atEnd: atEnd / requested, indexed: indexed / requested, searched: searched / requested };
  } finally {
    proc.kill('SIGKILL');
    rmSync(home, { recursive: true, force: true });
  }
}

console.log(`${streams} ${values.mib} MiB stream(s) at once, each on its own connection; VmHWM growth / bytes requested`);
for (let i = 0; i < Number(values.runs); i++) {
  for (const malloc of i % 2 === 0 ? (['agentd', 'glibc'] as const) : (['glibc', 'agentd'] as const)) {
    const r = await run(malloc);
    const how = malloc === 'agentd' ? 'bin/agentd' : 'glibc malloc defaults';
    console.log(`run ${i + 1}, ${how}: at end ${r.atEnd.toFixed(2)}x, once indexed ${r.indexed.toFixed(2)}x, after one search ${r.searched.toFixed(2)}x`);
  }
}
