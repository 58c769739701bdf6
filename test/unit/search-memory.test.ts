/**
 * What indexing and searching a big turn cost at their peak (issue 11,
 * memory proportional to the request), beyond where memory stood: a turn
 * whose user and assistant messages are 16 MiB each, as an echo stream of a
 * 16 MiB request stores. Measured in a fresh process
 * (test/helpers/search-peak.ts) with a storage thread's young generation
 * (storage-pool.ts: a 2 MiB semi-space) and a search thread's page cache
 * (db.ts, SEARCH_CACHE_KIB): indexing both 0.89x one message (0.49-0.50x
 * with the other connections' 2 MiB cache: what a bigger cache keeps of the
 * pages it read), a search that ranks and shows both 2.7-3.6x (when V8 collects the
 * slices it read moves it; bench/results/test-memory-bounds.md). Bounds: the
 * search's, the largest figure times 1.25, room for collection running later
 * on a busier machine; indexing's, 1.5x, because copying the text once more
 * (what the index did before) adds a whole 1x to a figure that does not move.
 * Before search read big texts in slices it read both messages whole, with
 * their folded copies and SQLite's: several times the bound.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const MIB = 1024 * 1024;
const SIZE_MIB = 16;
const MAX_INDEX_GROWTH = 1.5;
const MAX_SEARCH_GROWTH = 4.5;
const SCRIPT = resolve(import.meta.dirname, '../helpers/search-peak.ts');

describe('indexing and searching a big turn', () => {
  it(`peaks at less than ${MAX_INDEX_GROWTH}x and ${MAX_SEARCH_GROWTH}x one message, and shows both messages' snippets`, { timeout: 120_000 }, async () => {
    // --max-semi-space-size=2: the young generation a storage thread runs with (maxYoungGenerationSizeMb 6).
    const { stdout } = await promisify(execFile)(process.execPath, ['--max-semi-space-size=2', '--import', 'tsx', SCRIPT, String(SIZE_MIB)], {
      cwd: resolve(import.meta.dirname, '../..'),
    });
    const { indexed, searched, hits } = JSON.parse(stdout) as { indexed: number; searched: number; hits: unknown };
    const x = (bytes: number): string => `${(bytes / (SIZE_MIB * MIB)).toFixed(2)}x`;
    console.log(`${SIZE_MIB} MiB user and assistant messages: indexing +${x(indexed)}, one search +${x(searched)}`);
    expect(hits).toEqual([
      { sender: 'big', snippets: [1024, 1024] },
      { sender: 'small', snippets: [3, 1] },
    ]);
    expect(indexed).toBeLessThan(MAX_INDEX_GROWTH * SIZE_MIB * MIB);
    expect(searched).toBeLessThan(MAX_SEARCH_GROWTH * SIZE_MIB * MIB);
  });
});
