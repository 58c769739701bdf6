/** Issue 11: bounded decoding (max_elements) and the echo model's maxima, at config and check level. */
import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeBody } from '../../src/shared/codec.ts';
import { assertPortableMsgpack, TooManyElementsError } from '../../src/shared/portable-msgpack.ts';
import { DEFAULTS, ECHO_MAX } from '../../src/shared/config.ts';
import { ConfigError, validateAgentConfig, validateFileSettings } from '../../src/shared/config-checks.ts';
import { resolveConfig } from '../../src/main/config-load.ts';
import { bigMapBody } from '../helpers/big-bodies.ts';

/** The byte offset a TooManyElementsError names: how far the walk went before refusing. */
function refusedAt(body: Uint8Array, max: number): number {
  try {
    assertPortableMsgpack(body, max);
  } catch (err) {
    expect(err).toBeInstanceOf(TooManyElementsError);
    return (err as TooManyElementsError).at;
  }
  throw new Error('the body was accepted');
}

describe('bounded decoding', () => {
  it('refuses a 16 MiB map of 2.6M keys at its header, without walking the keys', () => {
    const body = bigMapBody(2_600_000);
    expect(body.length).toBeGreaterThan(15_000_000); // the "16 MiB body", within the 16 MiB limit
    expect(body.length).toBeLessThanOrEqual(DEFAULTS.maxBodyBytes);
    expect(refusedAt(body, DEFAULTS.maxElements)).toBe(5); // just past the map32 header
  });

  it('refuses a tiny body whose map header claims 2^32-1 entries at once, whatever the limit', () => {
    const body = Uint8Array.from([0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 0x61, 0x01]);
    expect(refusedAt(body, 100_000)).toBe(5);
    expect(() => assertPortableMsgpack(body)).toThrow(/truncated: 8589934590 values announced at byte 5, 3 bytes left/);
    const array = Uint8Array.from([0xdd, 0x7f, 0xff, 0xff, 0xff, 0xc0]);
    expect(() => assertPortableMsgpack(array)).toThrow(/truncated: 2147483647 values announced/);
  });

  it('counts entries over the whole body: many small maps stop the walk as soon as the total passes the limit', () => {
    // An array of 1.3M one-entry maps: each header is small, the total is not.
    const n = 1_300_000;
    const body = new Uint8Array(5 + n * 4);
    body.set([0xdd, (n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]);
    for (let i = 0; i < n; i++) body.set([0x81, 0xa1, 0x6b, 0x00], 5 + i * 4);
    // 1.3M array entries exceed the limit at the array header already;
    expect(refusedAt(body, 100_000)).toBe(5);
    // under a limit the array itself fits, the maps inside push it over after 1,000 of them.
    expect(refusedAt(body, n + 1_000)).toBe(5 + 1_000 * 4 + 1);
  });

  it('accepts exactly max_elements entries and refuses one more (a map entry counts once)', () => {
    const value = { a: [1, 2, 3], b: { c: null, d: [] } }; // 2 + 3 + 2 + 0 = 7
    const body = encodeBody(value);
    expect(() => assertPortableMsgpack(body, 7)).not.toThrow();
    expect(() => assertPortableMsgpack(body, 6)).toThrow(/more than 6 array or map entries \(max_elements\)/);
  });
});

describe('config: max_elements and echo maxima', () => {
  it('max_elements defaults to 100,000 and is read from the file', () => {
    const home = mkdtempSync(join(tmpdir(), 'agentd-cfg-'));
    expect(resolveConfig({ home }, {}).maxElements).toBe(100_000);
    writeFileSync(join(home, 'agentd.json'), JSON.stringify({ max_elements: 500 }));
    expect(resolveConfig({ home }, {}).maxElements).toBe(500);
  });

  it('refuses a max_elements that is not a positive integer', () => {
    for (const bad of [0, -1, 1.5, '10', null]) {
      expect(() => validateFileSettings({ max_elements: bad }, 'f')).toThrow(/f: max_elements must be an integer >= 1/);
    }
  });

  it('accepts echo settings up to 1 s each and refuses anything above, naming the field', () => {
    const ok = validateAgentConfig({ echo: { cpu_us: ECHO_MAX.cpu_us, delay_ms: ECHO_MAX.delay_ms } }, 'f', 'a');
    expect(ok.echo).toEqual({ cpu_us: 1_000_000, delay_ms: 1_000 });
    const bad: [Record<string, number>, RegExp][] = [
      [{ cpu_us: 2 ** 53 }, /f: a\.echo\.cpu_us must be an integer >= 0 and <= 1000000, got 9007199254740992/],
      [{ cpu_us: 1_000_001 }, /a\.echo\.cpu_us must be an integer >= 0 and <= 1000000/],
      [{ cpu_us: -1 }, /a\.echo\.cpu_us must be an integer >= 0/],
      [{ delay_ms: 1_001 }, /a\.echo\.delay_ms must be an integer >= 0 and <= 1000, got 1001/],
      [{ delay_ms: 0.5 }, /a\.echo\.delay_ms must be an integer/],
    ];
    for (const [echo, message] of bad) {
      expect(() => validateAgentConfig({ echo }, 'f', 'a')).toThrow(ConfigError);
      expect(() => validateAgentConfig({ echo }, 'f', 'a')).toThrow(message);
    }
  });

  it('refuses a config file whose agent exceeds an echo maximum', () => {
    expect(() => validateFileSettings({ agents: { hot: { echo: { cpu_us: 5_000_000 } } } }, 'agentd.json')).toThrow(
      /agentd\.json: agents\.hot\.echo\.cpu_us must be an integer >= 0 and <= 1000000/,
    );
  });
});
