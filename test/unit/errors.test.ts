import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Code } from '../../src/shared/errors.ts';

/** docs/PROTOCOL.md from its `### Errors` heading up to the next heading. */
function errorsSection(): string {
  const protocol = readFileSync(resolve(import.meta.dirname, '../../docs/PROTOCOL.md'), 'utf8');
  const start = protocol.indexOf('\n### Errors\n');
  expect(start, 'docs/PROTOCOL.md has a "### Errors" section').toBeGreaterThan(-1);
  const body = protocol.slice(start + '\n### Errors\n'.length);
  const next = body.search(/^#/m);
  return next === -1 ? body : body.slice(0, next);
}

describe('error codes', () => {
  it('match the table in docs/PROTOCOL.md both ways', () => {
    const documented = [...errorsSection().matchAll(/^\| (\d{3}) \|/gm)].map((m) => Number(m[1])).sort();
    expect(documented.length).toBeGreaterThan(0);
    expect(Object.values(Code).sort()).toEqual(documented);
  });
});
