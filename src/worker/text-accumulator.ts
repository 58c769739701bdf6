/**
 * A step's text, appended delta by delta. `s += delta` keeps one string node
 * per delta until the result is flattened (8M words of a 16 MiB answer would
 * hold 8M nodes, several times the text); this copies deltas into a scratch
 * buffer and keeps one string per 64 KiB.
 */
import { Utf8Scratch } from './utf8-scratch.ts';

export class TextAccumulator {
  #pieces: string[] = [];
  readonly #scratch = new Utf8Scratch((joined) => this.#pieces.push(joined));

  append(delta: string): void {
    if (delta !== '') this.#scratch.add(delta);
  }

  get empty(): boolean {
    return this.#pieces.length === 0 && this.#scratch.bytes === 0;
  }

  text(): string {
    this.#scratch.take();
    if (this.#pieces.length > 1) this.#pieces = [this.#pieces.join('')];
    return this.#pieces[0] ?? '';
  }

  clear(): void {
    this.#scratch.take();
    this.#pieces = [];
  }
}
