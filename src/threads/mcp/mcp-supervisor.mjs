// Runs one stdio MCP server so that it never outlives agentd, even after
// `kill -9` of the daemon. The daemon spawns this script; it spawns the server
// in a process group of its own, sharing this process's stdin/stdout (no
// copying), and kills that whole group when:
//   - its parent (the daemon) is gone: it is re-parented, so `ppid` changes;
//   - it gets SIGTERM/SIGINT/SIGHUP (the daemon stopping the server).
// It exits with the server. The server's environment is exactly the keys
// named in AGENTD_MCP_ENV_KEYS (its configured `env` plus PATH), nothing the
// daemon or the SDK's transport added. Usage: node mcp-supervisor.mjs COMMAND [ARGS...]
import { spawn } from 'node:child_process';

const PARENT_CHECK_MS = 200;
const TERM_GRACE_MS = 1000;

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
  killGroup('SIGTERM');
  setTimeout(() => killGroup('SIGKILL'), TERM_GRACE_MS).unref();
};

child.on('error', (err) => {
  process.stderr.write(`cannot start ${command}: ${err.message}\n`);
  process.exit(127);
});
child.on('exit', (code, signal) => {
  killGroup('SIGKILL'); // whatever the server left behind in its group
  process.exit(code ?? (signal ? 128 : 1));
});
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, stop);
setInterval(() => {
  if (process.ppid !== parent) {
    killGroup('SIGKILL');
    stop();
  }
}, PARENT_CHECK_MS);
