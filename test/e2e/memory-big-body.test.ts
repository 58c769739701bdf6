/**
 * Big turn bodies take their own path through main (request-body.ts): the
 * content is not decoded there but handed to the shard as UTF-8 bytes. The
 * text must arrive exactly (any script), be stored exactly, and a body of the
 * same size with a malformed field must still get its 400.
 */
import { describe, expect, it } from 'vitest';
import { AgentdError } from '../../src/client/index.ts';
import { testClient, testDaemon } from '../helpers/daemon.ts';
import { LAZY_BODY_BYTES } from '../../src/main/net/request-body.ts';

const CONFIG = { agents: { assistant: { model: 'echo' } } };
/** Well past the lazy threshold, with one-, two-, three- and four-byte characters. */
const content = 'plain é ñ 日本語 🙂 words '.repeat(Math.ceil((4 * LAZY_BODY_BYTES) / 30));

describe('a big turn body', () => {
  it('arrives at the model and in storage exactly, for send and stream; a wrong other field gets its 400', { timeout: 60_000 }, async () => {
    const d = await testDaemon({ config: CONFIG });
    const c = await testClient(d);
    const reply = await c.send('assistant', content, { sender: 'big-send' });
    expect(reply.content === content).toBe(true);
    let streamed = '';
    for await (const ev of c.stream('assistant', content, { sender: 'big-stream', turn_id: 't1' })) if (ev.type === 'chunk') streamed += ev.content;
    expect(streamed === content).toBe(true);
    for (const sender of ['big-send', 'big-stream']) {
      const h = await c.request('get_conversation_history', { agent: 'assistant', sender });
      const messages = (h.conversation_history as { messages: { role: string; content: string }[] }).messages;
      expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
      expect(messages.every((m) => m.content === content)).toBe(true);
    }
    const err = await c.request('send', { agent: 'assistant', content, on_busy: 'sometimes' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentdError);
    expect((err as AgentdError).message).toContain('send.on_busy must be one of');
    await expect(c.ping()).resolves.toBeUndefined();
  });
});
