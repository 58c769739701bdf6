/**
 * A published payload crosses to the shards once, whatever the number of
 * subscriptions it fires. A big payload becomes UTF-8 bytes in shared memory
 * (ContentBytes) on its first fire; the other fires of the same publish (one
 * synchronous run) reuse those bytes, so every fired turn's message carries
 * the same view: a shard gets one SharedArrayBuffer, not one copy per turn,
 * and decodes it once (decodeTurnContent). Small payloads stay strings:
 * cloning them costs less than sharing them.
 */
import { sharedBytes } from '../../shared/codec.ts';
import { ContentBytes, LAZY_BODY_BYTES } from '../net/request-body.ts';

let last: { text: string; content: ContentBytes } | null = null;

/** The content of a fired turn: `payload` as is when small, else its shared bytes, made once per publish. */
export function sharedPayload(payload: string): string | ContentBytes {
  if (payload.length < LAZY_BODY_BYTES) return payload;
  // `===` on the same string is a pointer comparison; a different one of the same length is compared once.
  if (last !== null && last.text === payload) return last.content;
  const content = new ContentBytes(sharedBytes(Buffer.from(payload, 'utf8')));
  // Held only until this synchronous run (the publish's loop of fires) ends: memory returns with the turns.
  if (last === null) queueMicrotask(() => (last = null));
  last = { text: payload, content };
  return content;
}
