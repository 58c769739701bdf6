/**
 * A strict MessagePack validator, independent of msgpackr: it walks the bytes
 * and throws on extension types (fixext, ext 8/16/32, including timestamps),
 * the reserved byte 0xc1, integers beyond ±2^53-1, trailing bytes, or a
 * truncated value. What passes is readable by any conforming decoder.
 *
 * Main runs it on every client body before decoding, because msgpackr
 * accepts more than the protocol allows (0xc1, its own extensions); tests
 * run it on every daemon body. It skips over strings and binaries without
 * reading them, so its cost is a few steps per value.
 */
export function assertPortableMsgpack(buf: Uint8Array): void {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let at = 0;
  const need = (n: number): void => {
    if (at + n > buf.length) throw new Error(`truncated at byte ${at}`);
  };
  const skip = (n: number): void => {
    need(n);
    at += n;
  };
  const value = (depth: number): void => {
    if (depth > 512) throw new Error('nesting too deep');
    need(1);
    const b = buf[at++]!;
    if (b <= 0x7f || b >= 0xe0) return; // fixint
    if (b >= 0x80 && b <= 0x8f) return items((b & 0x0f) * 2, depth);
    if (b >= 0x90 && b <= 0x9f) return items(b & 0x0f, depth);
    if (b >= 0xa0 && b <= 0xbf) return skip(b & 0x1f);
    switch (b) {
      case 0xc0: case 0xc2: case 0xc3: return;
      case 0xc1: throw new Error('reserved byte 0xc1');
      case 0xc4: need(1); return skip(buf[at++]!);
      case 0xc5: need(2); { const n = view.getUint16(at); at += 2; return skip(n); }
      case 0xc6: need(4); { const n = view.getUint32(at); at += 4; return skip(n); }
      case 0xc7: case 0xc8: case 0xc9: case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:
        throw new Error(`extension type 0x${b.toString(16)} at byte ${at - 1}`);
      case 0xca: return skip(4);
      case 0xcb: return skip(8);
      case 0xcc: return skip(1);
      case 0xcd: return skip(2);
      case 0xce: return skip(4);
      case 0xcf: need(8); { const v = view.getBigUint64(at); at += 8; if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error('uint64 above 2^53-1'); return; }
      case 0xd0: return skip(1);
      case 0xd1: return skip(2);
      case 0xd2: return skip(4);
      case 0xd3: need(8); { const v = view.getBigInt64(at); at += 8; if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < -BigInt(Number.MAX_SAFE_INTEGER)) throw new Error('int64 beyond 2^53-1'); return; }
      case 0xd9: need(1); return skip(buf[at++]!);
      case 0xda: need(2); { const n = view.getUint16(at); at += 2; return skip(n); }
      case 0xdb: need(4); { const n = view.getUint32(at); at += 4; return skip(n); }
      case 0xdc: need(2); { const n = view.getUint16(at); at += 2; return items(n, depth); }
      case 0xdd: need(4); { const n = view.getUint32(at); at += 4; return items(n, depth); }
      case 0xde: need(2); { const n = view.getUint16(at); at += 2; return items(n * 2, depth); }
      case 0xdf: need(4); { const n = view.getUint32(at); at += 4; return items(n * 2, depth); }
    }
    throw new Error(`unexpected byte 0x${b.toString(16)}`);
  };
  const items = (n: number, depth: number): void => {
    for (let i = 0; i < n; i++) value(depth + 1);
  };
  value(0);
  if (at !== buf.length) throw new Error(`${buf.length - at} trailing bytes`);
}
