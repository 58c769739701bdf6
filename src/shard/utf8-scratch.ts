/**
 * Joins many small strings without keeping them: each is copied (UTF-8) into
 * one scratch buffer as it arrives, so it dies young, and the buffer becomes
 * one string when full or asked. A fast producer's 8M two-byte deltas held
 * as strings until joined survive collections and fill the old generation;
 * copied at once they cost about their bytes.
 */
const SCRATCH_BYTES = 64 * 1024;
/** Most turns are short: the scratch starts small and grows to SCRATCH_BYTES. */
const FIRST_BYTES = 512;
/** A UTF-16 unit is at most 3 UTF-8 bytes. */
const MAX_BYTES_PER_UNIT = 3;

export class Utf8Scratch {
  #buf: Buffer | null = null;
  #len = 0;
  /** A trailing high surrogate kept for the next delta (see add). */
  #held = '';
  readonly #full: (joined: string) => void;

  /** `full` receives the joined text whenever the scratch fills (and on take). */
  constructor(full: (joined: string) => void) {
    this.#full = full;
  }

  /** Bytes collected, counting a held-back half of a surrogate pair. */
  get bytes(): number {
    return this.#len + this.#held.length;
  }

  add(delta: string): void {
    let s = this.#held === '' ? delta : this.#held + delta;
    this.#held = '';
    // A high surrogate at the end may be half of a pair the next delta completes: UTF-8 cannot hold it alone.
    if (isHighSurrogate(s.charCodeAt(s.length - 1))) {
      this.#held = s.slice(-1);
      s = s.slice(0, -1);
      if (s === '') return;
    }
    if (s.length * MAX_BYTES_PER_UNIT > SCRATCH_BYTES) {
      this.#flush();
      this.#full(s);
      return;
    }
    const need = this.#len + s.length * MAX_BYTES_PER_UNIT;
    if (need > SCRATCH_BYTES) this.#flush();
    const buf = this.#room(this.#len + s.length * MAX_BYTES_PER_UNIT);
    this.#len += buf.write(s, this.#len, 'utf8');
  }

  #room(need: number): Buffer {
    if (this.#buf !== null && this.#buf.length >= need) return this.#buf;
    let size = this.#buf?.length ?? FIRST_BYTES;
    while (size < need) size *= 2;
    const grown = Buffer.allocUnsafe(Math.min(size, SCRATCH_BYTES));
    this.#buf?.copy(grown, 0, 0, this.#len);
    this.#buf = grown;
    return grown;
  }

  /** Hands what is collected to `full`, a held-back surrogate included; nothing when empty. */
  take(): void {
    if (this.#held !== '') {
      const held = this.#held;
      this.#held = '';
      this.#flush();
      this.#full(held);
      return;
    }
    this.#flush();
  }

  #flush(): void {
    if (this.#len === 0) return;
    const joined = this.#buf!.toString('utf8', 0, this.#len);
    this.#len = 0;
    this.#full(joined);
  }
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}
