import { describe, expect, it } from 'vitest';
import { CancelReason, JobRunner } from '../../src/shard/job-runner.ts';
import { Conversation, type Job } from '../../src/shard/conversation.ts';
import { Cancellation } from '../../src/shard/turn/cancellation.ts';
import { TurnReply } from '../../src/shard/turn/turn-reply.ts';
import { Models } from '../../src/models/index.ts';
import { NO_TOOLS } from '../../src/shard/tools/tools.ts';
import type { Harness } from '../../src/shard/tools/harness.ts';
import { validateAgentConfig } from '../../src/shared/config-checks.ts';
import { createLogger } from '../../src/shared/log.ts';
import { turnRequest } from '../../src/main/turn-request.ts';
import { fakeOutbox, type Frame } from '../helpers/outbox.ts';

function setup() {
  const out = fakeOutbox();
  const runner = new JobRunner({
    outbox: out,
    log: createLogger('silent'),
    store: null,
    models: new Models({}),
    harness: { toolsFor: async () => NO_TOOLS } as unknown as Harness,
    agents: { a: validateAgentConfig({}, 'test', 'a') },
    idle: () => {},
  });
  const turn = (conv: Conversation, conn: number, req: number, content: string): Job => {
    const r = turnRequest({ conn, req, mode: 'stream', agent: conv.agent, sender: conv.sender, content });
    return { kind: 'turn', req: r, cancel: new Cancellation(), conv, reply: new TurnReply(out, r) };
  };
  /** Resolves once the conversation has nothing running or queued. */
  const settled = async (conv: Conversation): Promise<void> => {
    while (conv.runningDone !== null) await conv.runningDone;
  };
  return { out, runner, turn, settled };
}

const kinds = (frames: Frame[], req: number): string[] => frames.filter((f) => f.req === req).map((f) => Object.keys(f.value.stream)[0]!);

describe('JobRunner', () => {
  it('runs the jobs of one conversation in order, each seeing the history before it', async () => {
    const { out, runner, turn, settled } = setup();
    const conv = new Conversation('a', 's');
    runner.enqueue(turn(conv, 1, 1, 'one two'));
    runner.enqueue(turn(conv, 1, 2, 'three'));
    expect(conv.queued).toBe(1);
    await settled(conv);
    const order = out.frames.filter((f) => ['start', 'end'].includes(Object.keys(f.value.stream)[0]!)).map((f) => `${Object.keys(f.value.stream)[0]} ${f.req}`);
    expect(order).toEqual(['start 1', 'end 1', 'start 2', 'end 2']);
    const end2 = out.frames.find((f) => f.req === 2 && f.last)!.value.stream.end;
    expect(end2.usage.prompt_tokens).toBe(2 + 2 + 1);
    expect(conv.history.map((m) => m.content)).toEqual(['one two', 'one two', 'three', 'three']);
    expect(out.finishedAgents).toEqual(['a', 'a']);
  });

  it('a closed connection cancels its running job and ends its queued one with start then end', async () => {
    const { out, runner, turn, settled } = setup();
    const conv = new Conversation('a', 's');
    runner.enqueue(turn(conv, 1, 1, 'running'));
    runner.enqueue(turn(conv, 2, 9, 'other connection'));
    runner.enqueue(turn(conv, 1, 2, 'queued'));
    runner.cancelConnection(1, CancelReason.Disconnect);
    expect(kinds(out.frames, 2)).toEqual(['start', 'end']); // ended at once, never ran
    await settled(conv);
    const ends = new Map(out.frames.filter((f) => f.last).map((f) => [f.req, f.value.stream.end]));
    expect(ends.get(1)).toMatchObject({ stop_reason: 'cancelled', error: 'connection closed' });
    expect(ends.get(2)).toMatchObject({ stop_reason: 'cancelled', error: 'connection closed' });
    expect(ends.get(9)).toMatchObject({ stop_reason: 'text' });
  });

  it('a transient conversation (an ephemeral turn) stores nothing and publishes nothing', async () => {
    const { out, runner, turn, settled } = setup();
    const conv = new Conversation('a', 's', null, true);
    const job = turn(conv, 1, 1, 'just this');
    (job.req as { ephemeral: boolean }).ephemeral = true;
    runner.enqueue(job);
    await settled(conv);
    expect(conv.history).toEqual([]);
    expect(out.finishedAgents).toEqual([]);
    expect(kinds(out.frames, 1).at(-1)).toBe('end');
  });

  it('cancelAll ends every open job (shutdown)', async () => {
    const { out, runner, turn, settled } = setup();
    const x = new Conversation('a', 'x');
    const y = new Conversation('a', 'y', null, true);
    runner.enqueue(turn(x, 1, 1, 'a b c'));
    runner.enqueue(turn(x, 1, 2, 'd'));
    runner.enqueue(turn(y, 3, 3, 'e f'));
    runner.cancelAll(CancelReason.Shutdown);
    await Promise.all([settled(x), settled(y)]);
    const ends = out.frames.filter((f) => f.last).map((f) => [f.req, f.value.stream.end.stop_reason, f.value.stream.end.error]);
    expect(ends.sort()).toEqual([
      [1, 'cancelled', 'shutting down'],
      [2, 'cancelled', 'shutting down'],
      [3, 'cancelled', 'shutting down'],
    ]);
  });
});
