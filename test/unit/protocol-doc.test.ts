/**
 * docs/PROTOCOL.md against a real daemon: every operation the document
 * describes (a `#### \`name\`` heading under §4) must be one the daemon
 * knows. Each is sent with an argument that is not a map: a known operation
 * answers one 400 about its argument and does nothing else (no turn, no
 * subscription), an unknown one answers `unknown operation`. The reverse
 * holds too: every operation dispatch registers is documented.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { cleanup, startDaemon, type Daemon } from '../helpers/daemon.ts';
import { RawConn } from '../helpers/raw.ts';
import { operationNames } from '../../src/main/dispatch.ts';

const DOC = resolve(import.meta.dirname, '../../docs/PROTOCOL.md');

/** The operation names of §4, from their `#### \`name\`` headings, in document order. */
function documentedOperations(markdown: string): string[] {
  const start = markdown.search(/^## 4\. /m);
  const end = markdown.search(/^## 5\. /m);
  const section = markdown.slice(start, end === -1 ? undefined : end);
  return [...section.matchAll(/^#### `([a-z_]+)`\s*$/gm)].map((m) => m[1]!);
}

const documented = documentedOperations(readFileSync(DOC, 'utf8'));

let d: Daemon;
let conn: RawConn;
let nextId = 1;

beforeAll(async () => {
  d = await startDaemon({ workers: 1 });
  conn = await RawConn.open(d.socketPath);
});
afterAll(async () => {
  conn.close();
  await cleanup(d);
});

/** Sends `{op: 0}` and returns the single reply. */
async function probe(op: string): Promise<{ code: number; message: string }> {
  const id = nextId++;
  conn.send(id, { [op]: 0 });
  const frames = await conn.request(id);
  expect(frames).toHaveLength(1);
  return frames[0]!.body.error as { code: number; message: string };
}

describe('docs/PROTOCOL.md', () => {
  it('documents the operations under §4, each once', () => {
    expect(documented.length).toBeGreaterThanOrEqual(27);
    expect(new Set(documented).size).toBe(documented.length);
  });

  it('documents every operation dispatch serves, and nothing else', () => {
    expect([...documented].sort()).toEqual([...operationNames()].sort());
  });

  it('a name the daemon does not know is told apart (control)', async () => {
    const err = await probe('no_such_operation');
    expect(err.code).toBe(400);
    expect(err.message).toMatch(/unknown operation/);
  });

  it.each(documented)('documents `%s`, which the daemon knows', async (op) => {
    const err = await probe(op);
    expect(err.code).toBe(400);
    expect(err.message).not.toMatch(/unknown operation/);
    expect(err.message).toContain(op);
  });
});
