/** Splitting a sequence at random offsets, for the property tests (fast-check gives the offsets). */

/**
 * The pieces of a sequence of `length` cut at `cuts` (offsets in any order,
 * repeats allowed, wrapped into range), in order: `slice(from, to)` makes each.
 */
export function piecesAt<T>(length: number, cuts: number[], slice: (from: number, to: number) => T): T[] {
  const at = [...new Set(cuts.map((c) => c % (length + 1)))].sort((a, b) => a - b);
  const pieces: T[] = [];
  let from = 0;
  for (const to of [...at, length]) {
    pieces.push(slice(from, to));
    from = to;
  }
  return pieces;
}
