/**
 * The shard hash: fnv1a32(utf8(agent) + 0x00 + utf8(sender)). Every thread and
 * every future process that routes a pair must use this one function.
 *
 * UTF-8 is produced inline (no Buffer per call); lone surrogates hash as
 * U+FFFD, exactly as TextEncoder would encode them.
 */
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

function mix(hash: number, byte: number): number {
  return Math.imul(hash ^ byte, FNV_PRIME);
}

function hashString(hash: number, s: string): number {
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      hash = mix(hash, c);
      continue;
    }
    if (c < 0x800) {
      hash = mix(hash, 0xc0 | (c >> 6));
      hash = mix(hash, 0x80 | (c & 0x3f));
      continue;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        const cp = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
        i++;
        hash = mix(hash, 0xf0 | (cp >> 18));
        hash = mix(hash, 0x80 | ((cp >> 12) & 0x3f));
        hash = mix(hash, 0x80 | ((cp >> 6) & 0x3f));
        hash = mix(hash, 0x80 | (cp & 0x3f));
        continue;
      }
      c = 0xfffd; // lone surrogate
    }
    hash = mix(hash, 0xe0 | (c >> 12));
    hash = mix(hash, 0x80 | ((c >> 6) & 0x3f));
    hash = mix(hash, 0x80 | (c & 0x3f));
  }
  return hash;
}

/** FNV-1a 32-bit of utf8(agent) 0x00 utf8(sender), as an unsigned integer. */
export function pairHash(agent: string, sender: string): number {
  let h = hashString(FNV_OFFSET, agent);
  h = mix(h, 0);
  h = hashString(h, sender);
  return h >>> 0;
}

/** FNV-1a 32-bit of raw bytes; the reference the inline version is tested against. */
export function fnv1a32(bytes: Uint8Array): number {
  let h = FNV_OFFSET;
  for (let i = 0; i < bytes.length; i++) h = mix(h, bytes[i]!);
  return h >>> 0;
}

export function shardOf(agent: string, sender: string, shards: number): number {
  return pairHash(agent, sender) % shards;
}
