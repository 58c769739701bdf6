/**
 * Main's decoding of client bodies (request-body.ts): a big turn's content
 * stays UTF-8 bytes in shared memory, every other field reads as a whole
 * decode reads it, and every other body is decoded whole.
 */
import { describe, expect, it } from 'vitest';
import { decodeBody, decodeTurnContent, encodeBody } from '../../src/shared/codec.ts';
import { ContentBytes, decodeRequest, LAZY_BODY_BYTES } from '../../src/main/net/request-body.ts';

const big = 'é and words '.repeat(LAZY_BODY_BYTES / 8);

/** The decoded body with its ContentBytes turned back into text, as the shard would read it. */
function asText(value: unknown): unknown {
  const op = Object.values(value as Record<string, Record<string, unknown>>)[0]!;
  if (op.content instanceof ContentBytes) {
    const msg = { content: '', contentBytes: op.content.bytes };
    decodeTurnContent(msg);
    op.content = msg.content;
  }
  return value;
}

describe('decodeRequest', () => {
  it('leaves a big stream content as shared bytes and decodes every other field as msgpackr does', () => {
    const body = { stream: { agent: 'a', content: big, sender: 's', on_busy: 'interrupt', tool_choice: { type: 'none' }, correlation_id: 7 } };
    const decoded = decodeRequest(encodeBody(body)) as { stream: Record<string, unknown> };
    expect(decoded.stream.content).toBeInstanceOf(ContentBytes);
    expect((decoded.stream.content as ContentBytes).bytes.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(asText(decoded)).toEqual(body);
  });

  it('handles send, and content as the first or last field', () => {
    for (const body of [
      { send: { content: big, agent: 'a' } },
      { send: { agent: 'a', content: 'z'.repeat(LAZY_BODY_BYTES) } },
      { stream: { agent: 'a', content: 'z'.repeat(LAZY_BODY_BYTES), guest: null } },
    ]) {
      const decoded = decodeRequest(encodeBody(body));
      expect(Object.values(decoded as object)[0].content).toBeInstanceOf(ContentBytes);
      expect(asText(decoded)).toEqual(body);
    }
  });

  it('decodes whole what is not a big turn content: small bodies, other operations, non-string content, a big other field', () => {
    for (const body of [
      { stream: { agent: 'a', content: 'hello' } },
      { create_agent: { name: 'n', config: { system_prompt: big } } },
      { stream: { agent: 'a', content: [big] } },
      { stream: { agent: big, content: 'hi' } },
      { stream: { agent: 'a', content: 'short' }, extra: big },
    ]) {
      const bytes = encodeBody(body);
      expect(decodeRequest(bytes)).toEqual(decodeBody(bytes));
    }
  });

  it('keeps the last of duplicate content keys, as a whole decode does', () => {
    const head = encodeBody({ agent: 'a' });
    // {stream: {agent: 'a', content: <big>, content: 'small'}}: built by hand (a JS object cannot hold the duplicate).
    const map = Buffer.concat([
      Buffer.from([0x81]), encodeBody('stream'), Buffer.from([0x83]),
      head.subarray(1), encodeBody('content'), encodeBody(big), encodeBody('content'), encodeBody('small'),
    ]);
    expect(decodeRequest(map)).toEqual(decodeBody(map));
    expect(decodeRequest(map)).toEqual({ stream: { agent: 'a', content: 'small' } });
  });
});
