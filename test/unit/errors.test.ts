import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Code } from '../../src/shared/errors.ts';

describe('error codes', () => {
  it('match the table in PROTOCOL.md both ways', () => {
    const protocol = readFileSync(resolve(import.meta.dirname, '../../../shared/PROTOCOL.md'), 'utf8');
    const section = protocol.slice(protocol.indexOf('### Errors'), protocol.indexOf('## 3.'));
    const documented = [...section.matchAll(/^\| (\d{3}) \|/gm)].map((m) => Number(m[1])).sort();
    expect(documented.length).toBeGreaterThan(0);
    expect(Object.values(Code).sort()).toEqual(documented);
  });
});
