/**
 * Names a request carries (PROTOCOL §3): a sender, an event source or an
 * agent name is at most 256 bytes of valid UTF-8, and no client writes as an
 * `event:` sender, the bus's own conversations.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { encodeBody, encodeFrame } from '../../src/shared/codec.ts';
import { testClient, testDaemon } from '../helpers/daemon.ts';
import { RawConn } from '../helpers/raw.ts';

const long = 'x'.repeat(257);

describe('names in requests', () => {
  it('refuses a name over 256 bytes, a sender that is not UTF-8, and writing as an event: sender', async () => {
    const d = await testDaemon();
    const c = await testClient(d);
    await expect(c.send('assistant', 'hi', { sender: long })).rejects.toThrow('send.sender must be at most 256 bytes of UTF-8, got 257');
    await expect(c.send('assistant', 'hi', { sender: 'é'.repeat(129) })).rejects.toThrow(/at most 256 bytes of UTF-8, got 258/);
    await expect(c.request('get_conversation_history', { agent: 'assistant', sender: long })).rejects.toThrow(/get_conversation_history.sender must be at most 256 bytes/);
    await expect(c.request('publish_event', { source: long, payload: 'p' })).rejects.toThrow(/publish_event.source must be at most 256 bytes/);
    await expect(c.request('subscribe_event', { source: long, target_agent: 'assistant' })).rejects.toThrow(/subscribe_event.source must be at most 256 bytes/);
    await expect(c.send('a'.repeat(300), 'hi')).rejects.toThrow(/send.agent must be at most 256 bytes/);

    // The bus's conversations can be read, not written.
    await expect(c.send('assistant', 'hi', { sender: 'event:deploy.done' })).rejects.toThrow('send.sender must not start with "event:"');
    await expect(c.request('stream', { agent: 'assistant', content: 'hi', sender: 'event:x' })).rejects.toThrow(/stream.sender must not start with "event:"/);
    await expect(c.request('get_conversation_history', { agent: 'assistant', sender: 'event:deploy.done' })).rejects.toThrow(/no conversation/);

    // 256 bytes exactly is a name like any other.
    const ok = 'y'.repeat(256);
    expect((await c.send('assistant', 'fits', { sender: ok })).content).toBe('fits');

    // Bytes that are not UTF-8 (ff fe) decode to U+FFFD; such a sender is refused, not merged with others.
    const raw = await RawConn.open(d.socketPath);
    onTestFinished(() => raw.close());
    const body = Buffer.from(encodeBody({ send: { agent: 'assistant', sender: 'ZZ', content: 'hi' } }));
    const at = body.indexOf('ZZ');
    body[at] = 0xff;
    body[at + 1] = 0xfe;
    raw.write(encodeFrame(7, 0, body));
    const [reply] = await raw.request(7);
    expect(reply!.body).toEqual({ error: { code: 400, message: 'send.sender must be valid UTF-8 (U+FFFD is refused: it marks bytes that were not)' } });
    expect((await c.request('list_conversations', {})).conversation_list).toMatchObject({ conversations: [{ sender: ok }] });
  });
});
