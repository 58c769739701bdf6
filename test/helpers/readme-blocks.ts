/**
 * Reads the README's runnable examples: the ```sh block right under the
 * "Quick start" heading (the daemon's terminal) and every ```console block
 * after it (`$ COMMAND` lines, each followed by the output it prints).
 */

/** One `$ COMMAND` of a console block and the lines shown under it. */
export interface ConsoleStep {
  command: string;
  expected: string;
}

export interface ReadmeExamples {
  /** The quick start's sh block: commands without their trailing comments. */
  daemonCommands: string[];
  /** Every console block from the quick start on, in order, as one session. */
  steps: ConsoleStep[];
}

interface Fence {
  lang: string;
  lines: string[];
}

/** The fenced blocks of `text` from `fromLine` on, in order. */
function fences(lines: string[], fromLine: number): Fence[] {
  const out: Fence[] = [];
  let open: Fence | null = null;
  for (const line of lines.slice(fromLine)) {
    const mark = /^```(\S*)\s*$/.exec(line);
    if (mark === null) {
      open?.lines.push(line);
    } else if (open === null) {
      open = { lang: mark[1] ?? '', lines: [] };
    } else {
      out.push(open);
      open = null;
    }
  }
  if (open !== null) throw new Error('README: a fenced block is never closed');
  return out;
}

/** `cmd   # why` -> `cmd`: a comment starts at a `#` after two spaces, as the README writes them. */
function withoutComment(line: string): string {
  return line.replace(/\s{2,}#.*$/, '').trim();
}

function consoleSteps(block: Fence): ConsoleStep[] {
  const steps: ConsoleStep[] = [];
  for (const line of block.lines) {
    if (line.startsWith('$ ')) steps.push({ command: line.slice(2), expected: '' });
    else if (steps.length === 0) throw new Error(`README: console block output before any command: ${line}`);
    else steps[steps.length - 1]!.expected += `${line}\n`;
  }
  return steps;
}

export function readmeExamples(readme: string): ReadmeExamples {
  const lines = readme.split('\n');
  const heading = lines.indexOf('## Quick start');
  if (heading < 0) throw new Error('README: no "## Quick start" heading');
  const blocks = fences(lines, heading + 1);
  const first = blocks[0];
  if (first === undefined || first.lang !== 'sh') throw new Error('README: the quick start must open with a ```sh block');
  const daemonCommands = first.lines.map(withoutComment).filter((l) => l !== '');
  const steps = blocks.filter((b) => b.lang === 'console').flatMap(consoleSteps);
  return { daemonCommands, steps };
}

/** `export NAME=VALUE` -> [NAME, VALUE] (quotes not supported: the README needs none); else null. */
export function parseExport(command: string): [string, string] | null {
  const m = /^export ([A-Z_][A-Z0-9_]*)=(\S+)$/.exec(command);
  return m === null ? null : [m[1]!, m[2]!];
}

/**
 * What may differ between a run and the README: round-trip times and
 * timestamps, the clone's path and the home's, trailing blanks.
 */
export function normalize(text: string, paths: Record<string, string> = {}): string {
  let out = text;
  for (const [actual, shown] of Object.entries(paths)) out = out.split(actual).join(shown);
  return out
    .replace(/\d+(\.\d+)? ms\b/g, 'N ms')
    .replace(/\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}/g, 'DATE')
    .replace(/\br[0-9a-f]{8}-[0-9a-z]+-\d+\b/g, 'RUN_ID') // run ids are made at run time
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n')
    .trim();
}
