// One worker of the design floor (see main.mjs): stores a batch of one-word
// turns in one transaction, answers each with the frames agentd sends for an
// echo turn (start, text_start, chunk, text_end, context_usage, end), posts
// the batch's bytes to main in one message.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { Packr } from 'msgpackr';

const { dbPath, index } = workerData;
const packr = new Packr({ useRecords: false, variableMapSize: true });
const db = new Database(dbPath, { fileMustExist: true }); // main created it, schema and all
db.pragma('busy_timeout = 5000');
db.pragma('synchronous = NORMAL');
const findConv = db.prepare('SELECT id, messages FROM conversations WHERE agent = ? AND sender = ?');
const addConv = db.prepare('INSERT INTO conversations (agent, sender) VALUES (?, ?)');
const addMessage = db.prepare('INSERT INTO messages (conversation, seq, role, content, created_at) VALUES (?, ?, ?, ?, ?)');
const setCount = db.prepare('UPDATE conversations SET messages = ? WHERE id = ?');
const indexMessage = db.prepare('INSERT INTO messages_fts (rowid, content) VALUES (?, ?)');
const conversations = new Map();
const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };

function conversation(agent, sender) {
  const key = `${agent}\u0000${sender}`;
  let conv = conversations.get(key);
  if (conv === undefined) {
    const row = findConv.get(agent, sender);
    conv = row === undefined ? { id: Number(addConv.run(agent, sender).lastInsertRowid), count: 0 } : { id: row.id, count: row.messages };
    conversations.set(key, conv);
  }
  return conv;
}

/** Stores the batch; returns the rowids and texts to index. */
const store = db.transaction((turns) => {
  const indexed = [];
  const now = new Date().toISOString();
  for (const t of turns) {
    const conv = conversation(t.agent, t.sender);
    for (const role of ['user', 'assistant']) {
      const id = Number(addMessage.run(conv.id, conv.count++, role, t.content, now).lastInsertRowid);
      indexed.push([id, t.content]);
    }
    setCount.run(conv.count, conv.id);
  }
  if (index === 'commit') for (const [id, text] of indexed) indexMessage.run(id, text);
  return indexed;
});
const indexAfter = db.transaction((rows) => {
  for (const [id, text] of rows) indexMessage.run(id, text);
});

function frames(t) {
  const bodies = [
    { stream: { start: { agent: t.agent } } },
    { stream: { text_start: { agent: t.agent } } },
    { stream: { chunk: { content: t.content } } },
    { stream: { text_end: { agent: t.agent } } },
    { stream: { context_usage: { usage } } },
    { stream: { end: { agent: t.agent, error: '', model: 'echo', usage, stop_reason: 'text' } } },
  ].map((b) => packr.pack(b));
  return bodies;
}

parentPort.on('message', (turns) => {
  // IMMEDIATE: the workers share the file, and a read that later upgrades to a write may fail SQLITE_BUSY.
  const indexed = store.immediate(turns);
  const parts = [];
  let total = 0;
  for (const t of turns) {
    const bodies = frames(t);
    const length = bodies.reduce((n, b) => n + 9 + b.length, 0);
    parts.push([t, bodies, length]);
    total += 8 + length;
  }
  // Not from Buffer's shared pool: the buffer is transferred to main.
  const out = Buffer.allocUnsafeSlow(total);
  let at = 0;
  for (const [t, bodies, length] of parts) {
    out.writeUInt32BE(t.conn, at);
    out.writeUInt32BE(length, at + 4);
    at += 8;
    bodies.forEach((b, i) => {
      out.writeUInt32BE(b.length, at);
      out.writeUInt32BE(t.id >>> 0, at + 4);
      out[at + 8] = i === bodies.length - 1 ? 1 : 0;
      out.set(b, at + 9);
      at += 9 + b.length;
    });
  }
  parentPort.postMessage(out, [out.buffer]);
  if (index === 'after') setImmediate(() => indexAfter.immediate(indexed));
});
