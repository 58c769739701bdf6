/**
 * A replacement shard's first job: store, as ended `stalled`, each turn its
 * frozen predecessor was running (main knows them; the frozen shard could not
 * store anything). Finishes before the shard takes any message, so the pair's
 * next turn sees the record, and a retry with the same turn_id replays it.
 */
import type { Logger } from '../shared/log.ts';
import type { StalledTurn } from '../shared/threads/shard-messages.ts';
import type { ConversationStorage } from '../storage/contract.ts';

export async function recordStalledTurns(storage: ConversationStorage, turns: readonly StalledTurn[], log: Logger): Promise<void> {
  for (const t of turns) {
    try {
      await storage.recordStalled(t);
      log.warn({ agent: t.agent, sender: t.sender }, 'stored a turn of a stalled shard as ended "stalled"');
    } catch (err) {
      log.error({ err, agent: t.agent, sender: t.sender }, 'storing a stalled turn failed');
    }
  }
}
