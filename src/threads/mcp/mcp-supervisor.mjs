// Runs one stdio MCP server so that it never outlives agentd, even after
// `kill -9` of the daemon. The daemon spawns this script; it spawns the server
// in a process group of its own, sharing this process's stdin/stdout (no
// copying), and kills that whole group when:
//   - its parent (the daemon) is gone: it is re-parented, so `ppid` changes;
//   - it gets SIGTERM/SIGINT/SIGHUP (the daemon stopping the server).
// A process the server started in a session or group of its own (setsid)
// escapes a group kill, so the supervisor also notes the server's
// descendants (from /proc, every DESCENDANT_SCAN_MS and once more before it
// kills) and kills each one still the same process (its start time). On a
// system without /proc only the group is killed.
// It exits with the server. The server's environment is exactly the keys
// named in AGENTD_MCP_ENV_KEYS (its configured `env` plus PATH), nothing the
// daemon or the SDK's transport added. Usage: node mcp-supervisor.mjs COMMAND [ARGS...]
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

const PARENT_CHECK_MS = 200;
const DESCENDANT_SCAN_MS = 1000;
const TERM_GRACE_MS = 1000;

/** pid → [parent pid, start time] of every process, from /proc; empty where there is none. */
function processTable() {
  const table = new Map();
  let names = [];
  try {
    names = readdirSync('/proc');
  } catch {
    return table;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // the name may hold spaces
      table.set(Number(name), [Number(fields[1]), fields[19]]);
    } catch {
      // gone meanwhile
    }
  }
  return table;
}

/** The server's descendants seen so far: pid → start time, kept after they are re-parented. */
const descendants = new Map();

function noteDescendants() {
  const table = processTable();
  const roots = new Set([child.pid, ...descendants.keys()]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, [ppid, start]] of table) {
      if (roots.has(ppid) && !roots.has(pid)) {
        roots.add(pid);
        descendants.set(pid, start);
        grew = true;
      }
    }
  }
  return table;
}

/** Kills every noted descendant that is still the process it was (same start time). */
function killDescendants() {
  const table = noteDescendants();
  for (const [pid, start] of descendants) {
    if (table.get(pid)?.[1] !== start) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

const [command, ...args] = process.argv.slice(2);
const keys = JSON.parse(process.env.AGENTD_MCP_ENV_KEYS ?? '[]');
const env = {};
for (const k of keys) if (process.env[k] !== undefined) env[k] = process.env[k];

const parent = process.ppid;
let child;
try {
  child = spawn(command, args, { env, stdio: 'inherit', detached: true });
} catch (err) {
  process.stderr.write(`cannot start ${command}: ${err.message}\n`);
  process.exit(127);
}

const killGroup = (signal) => {
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
};

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  noteDescendants();
  killGroup('SIGTERM');
  setTimeout(() => {
    killGroup('SIGKILL');
    killDescendants();
  }, TERM_GRACE_MS).unref();
};

child.on('error', (err) => {
  process.stderr.write(`cannot start ${command}: ${err.message}\n`);
  process.exit(127);
});
child.on('exit', (code, signal) => {
  killGroup('SIGKILL'); // whatever the server left behind in its group
  killDescendants(); // and outside it
  process.exit(code ?? (signal ? 128 : 1));
});
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, stop);
setInterval(() => {
  if (process.ppid !== parent) {
    noteDescendants(); // before the group dies and its escapees are re-parented
    killGroup('SIGKILL');
    killDescendants();
    stop();
  }
}, PARENT_CHECK_MS);
setInterval(noteDescendants, DESCENDANT_SCAN_MS).unref();
