import { describe, expect, it } from 'vitest';
import { GENERIC_REDACTOR, MIN_SECRET_CHARS, REDACTED, Redactor, secretValues } from '../../src/shared/redact.ts';

const KEY = 'sk-live-0123456789abcdef';
const MCP = 'ghp_mcpTokenValue42';

/** Feeds `text` to a stream redactor in pieces of `size` chars; returns what was sent. */
function streamed(r: Redactor, text: string, size: number): string {
  const s = r.stream();
  let out = '';
  for (let i = 0; i < text.length; i += size) out += s.push(text.slice(i, i + size));
  return out + s.flush();
}

describe('Redactor', () => {
  const r = new Redactor([KEY, MCP]);

  it('removes configured values wherever they occur', () => {
    expect(r.values(`key=${KEY}; again ${KEY}. mcp ${MCP}`)).toBe(`key=${REDACTED}; again ${REDACTED}. mcp ${REDACTED}`);
  });

  it('removes Bearer tokens and Authorization values in errors and tool output, configured or not', () => {
    expect(GENERIC_REDACTOR.all('401: header was "Authorization: Bearer abc.def-ghi" rejected')).toBe(
      `401: header was "Authorization: ${REDACTED}" rejected`,
    );
    expect(GENERIC_REDACTOR.all('{"authorization":"Basic dXNlcjpwYXNz","x":1}')).toBe(`{"authorization":"${REDACTED}","x":1}`);
    expect(GENERIC_REDACTOR.all('use bearer tok_12345 please')).toBe(`use bearer ${REDACTED} please`);
    expect(GENERIC_REDACTOR.all('Authorization=xyz123, next')).toBe(`Authorization=${REDACTED}, next`);
  });

  it('leaves ordinary text and model text about Bearer headers alone', () => {
    expect(GENERIC_REDACTOR.all('nothing to see here')).toBe('nothing to see here');
    expect(r.values('send an Authorization: Bearer <token> header')).toBe('send an Authorization: Bearer <token> header');
  });

  it('ignores values too short to tell from words, and empty sets are inactive', () => {
    const short = new Redactor(['1', 'yes', 'x'.repeat(MIN_SECRET_CHARS - 1), undefined, null, '']);
    expect(short.active).toBe(false);
    expect(short.values('1 yes')).toBe('1 yes');
    expect(new Redactor(['x'.repeat(MIN_SECRET_CHARS)]).active).toBe(true);
  });

  it('replaces a longer value whole when it contains a shorter one', () => {
    const nested = new Redactor(['abcdefgh', 'abcdefgh-ijkl']);
    expect(nested.values('[abcdefgh-ijkl]')).toBe(`[${REDACTED}]`);
  });

  it('redacts an error message, keeping a clean error as it is', () => {
    const clean = new Error('fine');
    expect(r.error(clean)).toBe(clean);
    const dirty = r.error(new Error(`401 bad key ${KEY}`));
    expect(dirty.message).toBe(`401 bad key ${REDACTED}`);
    expect(dirty.stack).not.toContain(KEY);
    expect(r.error(`thrown ${MCP}`).message).toBe(`thrown ${REDACTED}`);
  });

  it('collects every provider key and header value and the agent MCP env and headers', () => {
    const providers: { name: string; headers: Record<string, string> }[] = [
      { name: 'a', headers: { 'x-api-key': 'header-secret-1' } },
      { name: 'b', headers: {} },
    ];
    const keys: Record<string, string | undefined> = { a: 'key-of-provider-a', b: undefined };
    const values = secretValues(providers, (p) => keys[p.name], { mcps: { gh: { env: { T: MCP }, headers: { auth: 'mcp-header-val' } } } });
    expect(values.sort()).toEqual(['header-secret-1', 'key-of-provider-a', MCP, 'mcp-header-val'].sort());
  });
});

describe('StreamRedactor', () => {
  const r = new Redactor([KEY, MCP]);
  const text = `before ${KEY} middle ${MCP} after ${KEY}`;

  it('catches a secret split across chunks of any size', () => {
    for (const size of [1, 2, 3, 5, 7, 11, 64]) {
      const out = streamed(r, text, size);
      expect(out, `chunks of ${size}`).toBe(`before ${REDACTED} middle ${REDACTED} after ${REDACTED}`);
    }
  });

  it('holds back only a tail that could start a secret', () => {
    const s = r.stream();
    expect(s.push('hello ')).toBe('hello ');
    expect(s.push('world sk-li')).toBe('world ');
    expect(s.push('ke this')).toBe('sk-like thi'); // the last 's' could start the key
    expect(s.push('.')).toBe('s.');
    expect(s.flush()).toBe('');
  });

  it('redacts a long unfinished start of a secret at the end, and sends a short one', () => {
    const long = r.stream();
    expect(long.push(`x ${KEY.slice(0, 12)}`)).toBe('x ');
    expect(long.flush()).toBe(REDACTED);
    const short = r.stream();
    expect(short.push('x sk-')).toBe('x ');
    expect(short.flush()).toBe('sk-');
  });
});

describe('log scrubbing', () => {
  it('censors secret keys at any depth and redacts Bearer text in strings and errors, keeping the error class', async () => {
    const { scrub } = await import('../../src/shared/log.ts');
    class ProviderError extends Error {}
    const out = scrub({
      msg: 'failed: Bearer abc123xyz',
      config: { agents: { a: { mcps: { gh: { env: { T: MCP }, headers: { h: MCP } } } } } },
      err: new ProviderError('401 "Authorization: Bearer abc123xyz"'),
    }) as { msg: string; config: unknown; err: Error };
    expect(out.msg).toBe(`failed: Bearer ${REDACTED}`);
    expect(JSON.stringify(out.config)).not.toContain(MCP);
    expect(out.err).toBeInstanceOf(ProviderError);
    expect(out.err.message).toBe(`401 "Authorization: ${REDACTED}"`);
    expect(out.err.stack).not.toContain('abc123xyz');
  });
});
