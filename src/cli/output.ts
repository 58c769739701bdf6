/**
 * Small output helpers for agentctl: colour only on a terminal (and never
 * with NO_COLOR set), JSON for scripts, and a few text layouts.
 */
import type { Writable } from 'node:stream';

export interface Style {
  dim(s: string): string;
  bold(s: string): string;
  red(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
  cyan(s: string): string;
  /** Marks a search hit inside a snippet. */
  mark(s: string): string;
}

const plain = (s: string): string => s;
const sgr = (open: number, close: number) => (s: string): string => `\x1b[${open}m${s}\x1b[${close}m`;

export function colourEnabled(stream: Writable & { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.TERM === 'dumb') return false;
  return stream.isTTY === true;
}

export function makeStyle(colour: boolean): Style {
  if (!colour) return { dim: plain, bold: plain, red: plain, green: plain, yellow: plain, cyan: plain, mark: (s) => `**${s}**` };
  return { dim: sgr(2, 22), bold: sgr(1, 22), red: sgr(31, 39), green: sgr(32, 39), yellow: sgr(33, 39), cyan: sgr(36, 39), mark: sgr(7, 27) };
}

/** Where a command writes: stdout for results, stderr for progress and side channels (thinking, tools). */
export class Output {
  readonly out: Style;
  readonly err: Style;

  constructor(
    readonly stdout: Writable & { isTTY?: boolean } = process.stdout,
    readonly stderr: Writable & { isTTY?: boolean } = process.stderr,
  ) {
    this.out = makeStyle(colourEnabled(stdout));
    this.err = makeStyle(colourEnabled(stderr));
  }

  line(text = ''): void {
    this.stdout.write(`${text}\n`);
  }

  write(text: string): void {
    this.stdout.write(text);
  }

  note(text: string): void {
    this.stderr.write(`${text}\n`);
  }

  json(value: unknown): void {
    this.stdout.write(`${JSON.stringify(value)}\n`);
  }

  /** Rows as aligned columns (the last column is not padded). */
  table(rows: string[][]): void {
    const widths: number[] = [];
    for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, visibleLength(cell))));
    for (const row of rows) {
      this.line(row.map((cell, i) => (i === row.length - 1 ? cell : cell + ' '.repeat(widths[i]! - visibleLength(cell)))).join('  ').trimEnd());
    }
  }
}

function visibleLength(s: string): number {
  return s.replace(/\x1b\[[0-9;]*m/g, '').length;
}

/** Shortens one-line text for a summary, marking the cut. */
export function clip(text: string, max = 120): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

/** "3d 4h", "5m 2s", "12s": a readable duration. */
export function duration(secs: number): string {
  const d = Math.floor(secs / 86400);
  const h = Math.floor((secs % 86400) / 3600);
  const m = Math.floor((secs % 3600) / 60);
  const s = secs % 60;
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${m}m`;
  if (m > 0) return `${m}m ${s}s`;
  return `${s}s`;
}
