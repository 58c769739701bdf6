/** Big request bodies and texts built by hand: hostile bodies for the bounded-decoding tests, big texts for the memory tests. */

const KEY_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/**
 * One msgpack map32 of `keys` distinct 4-character keys, each mapped to 0:
 * 6 bytes an entry, so 2.6M keys fill just under 16 MiB.
 */
export function bigMapBody(keys: number): Uint8Array {
  const body = new Uint8Array(5 + keys * 6);
  body.set([0xdf, (keys >>> 24) & 0xff, (keys >>> 16) & 0xff, (keys >>> 8) & 0xff, keys & 0xff]);
  const base = KEY_CHARS.length;
  for (let i = 0, at = 5; i < keys; i++, at += 6) {
    body[at] = 0xa4; // fixstr of 4
    body[at + 1] = KEY_CHARS.charCodeAt(Math.floor(i / base ** 3) % base);
    body[at + 2] = KEY_CHARS.charCodeAt(Math.floor(i / base ** 2) % base);
    body[at + 3] = KEY_CHARS.charCodeAt(Math.floor(i / base) % base);
    body[at + 4] = KEY_CHARS.charCodeAt(i % base);
    body[at + 5] = 0x00;
  }
  return body;
}

/**
 * `mib` MiB of two-byte words ("w w ..."), flat, as a shard's decoded content
 * is (a repeat() result is a rope that binding would flatten), and joined from
 * 1 MiB pieces, so that no freed block of the whole size is left for a later
 * allocation to reuse (the memory peak scripts measure that allocation).
 */
export function bigWords(mib: number): string {
  const MIB = 1024 * 1024;
  return new Array<string>(mib).fill(Buffer.alloc(MIB, 'w ').toString('latin1')).join('');
}
