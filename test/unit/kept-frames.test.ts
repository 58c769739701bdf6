/** A detached run's kept frames (src/shard/runs/kept-frames.ts): what a rejoin is sent, and the caps PROTOCOL §4.13 states. */
import { describe, expect, it } from 'vitest';
import { KEPT_CHARS, KEPT_FRAMES, KeptFrames, type ReplaySink } from '../../src/shard/runs/kept-frames.ts';

/** What a replay sends, one line per frame, or null when the join asked for frames no longer kept. */
function replayed(kept: KeptFrames, afterSeq: number): string[] | null {
  const out: string[] = [];
  const sink: ReplaySink = {
    event: (name, body) => out.push(`${name} ${JSON.stringify(body)}`),
    text: (name, content, seq) => out.push(`${name} ${content} @${seq}`),
  };
  return kept.replay(afterSeq, sink) ? out : null;
}

describe('kept frames', () => {
  it('sends what came after the seq asked for: text deltas of one event as one delta, carrying the last seq', () => {
    const kept = new KeptFrames();
    kept.add(1, 'start', { run_id: 'r' });
    kept.addText(2, 'text_delta', 'Hel');
    kept.addText(3, 'text_delta', 'lo ');
    kept.addText(4, 'text_delta', 'you');
    kept.add(5, 'tool_call', { name: 't' });
    kept.addText(6, 'text_delta', '!');
    expect(replayed(kept, 0)).toEqual(['start {"run_id":"r"}', 'text_delta Hello you @4', 'tool_call {"name":"t"}', 'text_delta ! @6']);
    expect(replayed(kept, 2)).toEqual(['text_delta lo you @4', 'tool_call {"name":"t"}', 'text_delta ! @6']);
    expect(replayed(kept, 4)).toEqual(['tool_call {"name":"t"}', 'text_delta ! @6']);
    expect(replayed(kept, 6)).toEqual([]);
  });

  it('past KEPT_FRAMES drops the oldest, and refuses a join that asks for them', () => {
    const kept = new KeptFrames();
    for (let seq = 1; seq <= KEPT_FRAMES + 10; seq++) kept.add(seq, 'tool_result', { seq });
    expect(replayed(kept, 0)).toBeNull();
    expect(replayed(kept, 9)).toBeNull();
    const from10 = replayed(kept, 10)!;
    expect(from10).toHaveLength(KEPT_FRAMES);
    expect(from10[0]).toBe('tool_result {"seq":11}');
  });

  it('past KEPT_CHARS drops the oldest half of a long answer, and a join from inside the dropped half is refused', () => {
    const kept = new KeptFrames();
    const piece = 'x'.repeat(1024 * 1024);
    for (let seq = 1; seq <= 17; seq++) kept.addText(seq, 'text_delta', piece);
    expect(replayed(kept, 0)).toBeNull();
    const out = replayed(kept, 16)!;
    expect(out).toEqual([`text_delta ${piece} @17`]);
  });

  it('a single frame bigger than KEPT_CHARS is dropped, and a join from before it is refused, not sent a gap', () => {
    const kept = new KeptFrames();
    kept.add(1, 'start', { run_id: 'r' });
    kept.add(2, 'tool_result', { name: 't' });
    kept.add(3, 'tool_result', { output: 'y'.repeat(KEPT_CHARS + 1) });
    expect(replayed(kept, 1)).toBeNull();
    expect(replayed(kept, 2)).toBeNull();
    expect(replayed(kept, 3)).toEqual([]);
    kept.add(4, 'end', {});
    expect(replayed(kept, 3)).toEqual(['end {}']);
  });

  it('refuses a join from before a dropped frame whatever seq the kept frames began at', () => {
    const kept = new KeptFrames();
    kept.add(5, 'tool_result', { output: 'y'.repeat(KEPT_CHARS + 1) });
    expect(replayed(kept, 4)).toBeNull();
    expect(replayed(kept, 5)).toEqual([]);
  });
});
