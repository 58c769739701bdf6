/** An outbox for unit tests of the shard's logic: it keeps what it is given, decoded. */
import type { FrameOut } from '../../src/shard/outbox.ts';

export interface Frame {
  conn: number;
  req: number;
  last: boolean;
  value: any;
}

/** An outbox that keeps what it is given, decoded. */
export function fakeOutbox(): FrameOut & { frames: Frame[]; finishedAgents: string[] } {
  const frames: Frame[] = [];
  const finishedAgents: string[] = [];
  return {
    observing: false,
    // Every agent's done event is listened for: the tests see each finished turn.
    doneWatched: { has: () => true },
    frames,
    finishedAgents,
    frame: (conn, req, last, value) => frames.push({ conn, req, last, value }),
    textDelta: (conn, req, name, content, seq) => frames.push({ conn, req, last: false, value: { stream: { [name]: { content, seq } } } }),
    started: () => {},
    turnStarted: () => {},
    turnEnded: () => {},
    agentEvent: () => {},
    finished: (r) => finishedAgents.push(r.agent),
    activeAnswer: () => {},
    runList: () => {},
    purged: () => {},
  };
}
