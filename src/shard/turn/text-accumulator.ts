/**
 * A step's text, appended delta by delta. `s += delta` keeps one string node
 * per delta until the result is flattened (8M words of a 16 MiB answer would
 * hold 8M nodes, several times the text); this copies deltas into a scratch
 * buffer and keeps one string per 64 KiB. A model that announces its whole
 * text up front (ModelEvent `whole`) costs nothing more: while the deltas
 * continue that string, only how far they reached is kept.
 */
import { Utf8Scratch } from '../utf8-scratch.ts';

export class TextAccumulator {
  #pieces: string[] = [];
  readonly #scratch = new Utf8Scratch((joined) => this.#pieces.push(joined));
  /** The announced whole text the deltas so far are the start of, or null. */
  #whole: string | null = null;
  /** How many of its UTF-16 units the deltas have reached. */
  #reached = 0;

  append(delta: string, whole?: string): void {
    if (delta === '') return;
    if (whole !== undefined && this.empty) this.#whole = whole;
    if (this.#whole !== null && this.#whole.startsWith(delta, this.#reached)) {
      this.#reached += delta.length;
      return;
    }
    this.#untrack();
    this.#scratch.add(delta);
  }

  get empty(): boolean {
    return this.#reached === 0 && this.#pieces.length === 0 && this.#scratch.bytes === 0;
  }

  text(): string {
    if (this.#whole !== null) return this.#prefix();
    this.#scratch.take();
    if (this.#pieces.length > 1) this.#pieces = [this.#pieces.join('')];
    return this.#pieces[0] ?? '';
  }

  clear(): void {
    this.#scratch.take();
    this.#pieces = [];
    this.#whole = null;
    this.#reached = 0;
  }

  /** The part of the announced text reached so far: the string itself once complete, else a slice of it (no copy in V8). */
  #prefix(): string {
    const whole = this.#whole!;
    return this.#reached === whole.length ? whole : whole.slice(0, this.#reached);
  }

  /** A delta that does not continue the announced text: what it reached is taken as an ordinary delta. */
  #untrack(): void {
    if (this.#whole === null) return;
    const reached = this.#reached > 0 ? this.#prefix() : '';
    this.#whole = null;
    this.#reached = 0;
    // Through the scratch, which keeps a surrogate pair split across the two whole.
    this.#scratch.add(reached);
  }
}
