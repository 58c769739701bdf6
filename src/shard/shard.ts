/**
 * Shard entry point: one worker thread owning the conversations of the pairs
 * that hash to it, with its own storage (store-backends.ts: a SQLite
 * connection for reads, with turns committed by the turn writer thread, or a
 * PostgreSQL client). It takes batches of messages from
 * main, and sends back batches of ready-encoded frames.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { FromShard, OutputBuffers, ShardInit, StopRequest, ToShard } from '../shared/threads/shard-messages.ts';
import type { ShardBoot } from '../shared/threads/shard-boot.ts';
import { createLogger } from '../shared/log.ts';
import { decodeTurnContent } from '../shared/codec.ts';
import { Outbox } from './outbox.ts';
import { Inbox } from './inbox.ts';
import { openConversationStorage } from '../storage/backends.ts';
import { TurnScheduler } from './turn-scheduler.ts';
import { Models } from '../models/index.ts';
import { Harness } from './tools/harness.ts';
import { McpTools } from './tools/mcp-tools.ts';
import { ownerToken, WriteLock } from '../storage/sqlite/write-lock.ts';
import { startHeartbeat } from '../shared/liveness.ts';
import { recordStalledTurns } from './stalled-turns.ts';
import { WriterClient } from '../threads/writer/writer-client.ts';
import type { WriterPortMessage } from '../threads/writer/messages.ts';
import { partitionOf, SharedFences } from '../shared/partitions.ts';
import { shardOf } from '../shared/hash.ts';
import { pairKey } from './conversation.ts';
import { callMeter } from './call-meter.ts';

// The thread starts before main knows its init (ShardBoot): the modules above load meanwhile.
const { initPort } = workerData as ShardBoot;
const init = await new Promise<ShardInit>((resolve) => initPort.once('message', resolve));
initPort.close();
const port = parentPort!;
const log = createLogger(init.logLevel, { shard: init.index });
callMeter.observe(init.observe);
const outbox = new Outbox((batch, transfer) => port.postMessage(batch, transfer));
const writer = init.writerPort === null ? null : new WriterClient(init.writerPort);
const fences = init.fences === null ? null : new SharedFences(init.fences.partitions, init.fences.buffer);
const store = init.store === null ? null : await openConversationStorage(init.store, new WriteLock(init.writeLock, ownerToken(init.index)), writer, log, fences);
const models = new Models(init.providers, log);
const scheduler = new TurnScheduler({
  outbox,
  agents: init.agents,
  log,
  store,
  memoryConversations: init.memoryConversations,
  memoryBytes: init.memoryBytes,
  runRetentionMs: init.runRetentionMs,
  ownsPair: (agent, sender) => shardOf(agent, sender, init.shards) === init.index,
  models,
  harness: new Harness(init.harnessPort, init.home, init.providers, new McpTools(init.mcpPort)),
});

/** Main's messages, in order, a slice per event-loop turn (Inbox); `active_query` and `tallies_query` answered on arrival. */
const inbox = new Inbox<ToShard>(
  (msg) => {
    if (msg.type === 'turn') decodeTurnContent(msg); // a big content arrives as bytes main left undecoded
    if (init.crashToken !== null && msg.type === 'turn' && msg.content === init.crashToken) {
      // Test-only fault injection (AGENTD_TEST_CRASH_TOKEN): die like a real bug would.
      throw new Error(`shard ${init.index}: crash injected by AGENTD_TEST_CRASH_TOKEN`);
    }
    if (msg.type === 'settings') {
      log.level = msg.logLevel;
      return models.setProviders(msg.providers);
    }
    scheduler.handle(msg);
  },
  (msg) => msg.type === 'active_query' || msg.type === 'tallies_query',
);

startHeartbeat(init.heartbeat, init.heartbeatMs);
// Before any message is taken (main's messages wait in the port until the
// listener below is added): the pair's next turn must see how the stalled one ended.
if (store !== null) {
  // A turn that was waiting for approval when its shard froze is resumed (below), not stored as stalled.
  const waiting = new Set((await store.waitingRuns().catch(() => [])).map((r) => pairKey(r.agent, r.sender)));
  await recordStalledTurns(store, init.stalled.filter((t) => !waiting.has(pairKey(t.agent, t.sender))), log);
}
// Runs left waiting for approval (a restart, or this shard replaced): resumed before any message is taken.
// In a cluster only those of partitions this node serves now; the others come with their partitions (restore_runs).
await scheduler.restoreWaiting((agent, sender) => fences === null || fences.tokenOf(partitionOf(agent, sender, fences.partitions)) !== null);

/** Shutdown's last step: the store closes (a PostgreSQL pool ends its sessions), then main may terminate the thread. */
async function stop(): Promise<void> {
  await store?.close().catch((err: unknown) => log.warn({ err: String(err) }, 'closing the store at shutdown failed'));
  port.postMessage({ type: 'stopped' } satisfies FromShard);
}

port.on('message', (batch: ToShard[] | WriterPortMessage | StopRequest | OutputBuffers) => {
  if (!Array.isArray(batch)) {
    if (batch.type === 'stop') return void stop();
    if (batch.type === 'output_buffers') return outbox.reuse(batch.buffers);
    // Main replaced the turn writer: batches waiting on the old one have failed already.
    return writer?.attach(batch.port);
  }
  inbox.take(batch);
});

port.postMessage({ type: 'ready' } satisfies FromShard);
