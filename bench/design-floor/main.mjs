// The design floor: the least a daemon of agentd's exact shape can do for a
// stored turn. Main decodes each request, hashes (agent, sender) to a worker
// thread and posts the turn (one post per worker per event-loop turn); the
// worker (shard.mjs) stores the user and assistant messages in SQLite, encodes
// the turn's frames with msgpackr and posts the batch's bytes back; main
// writes them. No agent loop, no limits, no validation: the physical limit of
// the design, not a competitor. Plain JS on purpose (no loader).
//
//   node bench/design-floor/main.mjs UNIX_PATH DB_PATH WORKERS INDEX
//     INDEX: "commit" (FTS5 rows written in the turn's transaction) or
//            "after" (written in a second transaction after the reply is posted)
//   prints "port N" once both listeners are up.
import { createServer } from 'node:net';
import { rmSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { Unpackr } from 'msgpackr';

const [unixPath, dbPath, workerCount, index] = process.argv.slice(2);
const unpackr = new Unpackr({ useRecords: false });
const HEADER = 9;

function fnv1a(agent, sender) {
  let h = 0x811c9dc5;
  const bytes = Buffer.from(`${agent}\u0000${sender}`);
  for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h;
}

// The file and its schema exist before any worker opens it: workers creating
// them at once raced for the lock (SQLITE_BUSY, a worker and the floor gone).
const setup = new Database(dbPath);
setup.pragma('journal_mode = WAL');
setup.exec(`CREATE TABLE IF NOT EXISTS conversations (id INTEGER PRIMARY KEY, agent TEXT NOT NULL, sender TEXT NOT NULL, messages INTEGER NOT NULL DEFAULT 0, UNIQUE (agent, sender));
  CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, conversation INTEGER NOT NULL, seq INTEGER NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, created_at TEXT NOT NULL);
  CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(content, content='', contentless_delete=1);`);
setup.close();

const sockets = new Map();
let nextConn = 1;
const shards = [];
for (let i = 0; i < Number(workerCount); i++) {
  const worker = new Worker(new URL('./shard.mjs', import.meta.url), { workerData: { dbPath, index } });
  const shard = { worker, pending: [], scheduled: false };
  // A batch of replies: one buffer of [conn u32][len u32][frames…] sections.
  worker.on('message', (bytes) => {
    const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let at = 0; at < buf.length; ) {
      const conn = buf.readUInt32BE(at);
      const len = buf.readUInt32BE(at + 4);
      sockets.get(conn)?.write(buf.subarray(at + 8, at + 8 + len));
      at += 8 + len;
    }
  });
  worker.on('error', (err) => {
    // A better-sqlite3 error crosses the thread as a plain object: no stack, but its message and code.
    process.stderr.write(`design floor shard ${i}: ${err?.stack ?? `${err?.code ?? ''} ${err?.message ?? String(err)}`}\n`);
    process.exit(1);
  });
  shards.push(shard);
}

function post(shard) {
  shard.scheduled = false;
  const batch = shard.pending;
  shard.pending = [];
  shard.worker.postMessage(batch);
}

function accept(conn, id, body) {
  const turn = unpackr.unpack(body).stream;
  const shard = shards[fnv1a(turn.agent, turn.sender) % shards.length];
  shard.pending.push({ conn, id, agent: turn.agent, sender: turn.sender, content: turn.content });
  if (!shard.scheduled) {
    shard.scheduled = true;
    setImmediate(post, shard);
  }
}

function onConn(socket) {
  const conn = nextConn++;
  sockets.set(conn, socket);
  socket.setNoDelay(true);
  let pending = null;
  socket.on('data', (chunk) => {
    const buf = pending === null ? chunk : Buffer.concat([pending, chunk]);
    pending = null;
    let at = 0;
    while (buf.length - at >= HEADER) {
      const len = buf.readUInt32BE(at);
      if (buf.length - at < HEADER + len) break;
      accept(conn, buf.readUInt32BE(at + 4), buf.subarray(at + HEADER, at + HEADER + len));
      at += HEADER + len;
    }
    if (at < buf.length) pending = buf.subarray(at);
  });
  socket.on('close', () => sockets.delete(conn));
  socket.on('error', () => {});
}

rmSync(unixPath, { force: true });
const unix = createServer(onConn).listen(unixPath, () => {
  const tcp = createServer(onConn).listen(0, '127.0.0.1', () => process.stdout.write(`port ${tcp.address().port}\n`));
});
process.on('SIGTERM', () => process.exit(0));
void unix;
