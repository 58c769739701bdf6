/**
 * A shard's output buffers are handed back to it for reuse once main has
 * written them (OutputBuffers). A buffer handed back too early would be
 * refilled while a socket still waits to send its bytes: a client that reads
 * late would get another stream's text. Two streams share one shard (and so
 * its batches); one client reads nothing until the other's stream is over.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { testClient, testDaemon } from '../helpers/daemon.ts';
import { RawConn } from '../helpers/raw.ts';

/** Words that say where they are: any byte out of place changes the text. */
const numbered = (prefix: string, words: number): string => Array.from({ length: words }, (_, i) => `${prefix}${i} `).join('');

describe('output buffers handed back to their shard', () => {
  it('carry no byte of one stream into another, however late a client reads', { timeout: 120_000 }, async () => {
    const d = await testDaemon({ workers: 1, config: { agents: { assistant: { model: 'echo' } } } });
    const late = await RawConn.open(d.socketPath);
    onTestFinished(() => late.close());
    const lateText = numbered('late', 150_000);
    late.socket.pause(); // its replies wait in main, on batches the other stream's sections share
    late.send(1, { stream: { agent: 'assistant', sender: 'late-reader', content: lateText } });

    const c = await testClient(d);
    onTestFinished(() => c.close());
    for (let round = 0; round < 3; round++) {
      const text = numbered(`r${round}w`, 100_000);
      const parts: string[] = [];
      for await (const ev of c.stream('assistant', text, { sender: 'reader' })) if (ev.type === 'chunk') parts.push(ev.content);
      expect(parts.join('') === text).toBe(true);
    }
    // Buffers did go back (else this test would check nothing): main counts what it hands back.
    expect((await c.stats()).output_buffers_returned).toBeGreaterThan(0);

    late.socket.resume();
    await late.until((frames) => frames.some((f) => f.last), 'the late stream to end', 60_000);
    const got = late.frames.map((f) => (f.body.stream?.chunk?.content as string | undefined) ?? '').join('');
    expect(late.frames.at(-1)?.body.stream?.end).toMatchObject({ stop_reason: 'text' });
    expect(got.length).toBe(lateText.length);
    expect(got === lateText).toBe(true);
  });
});
