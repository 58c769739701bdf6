/**
 * `agentctl top`: the dashboard's live view in the terminal, over the
 * socket protocol (`get_dashboard`, PROTOCOL §4.9), so it works wherever
 * agentctl does, metrics listener or not. Redraws every second on the
 * alternate screen; q or Ctrl-C quits and restores the screen.
 */
import type { AgentdClient } from '../../client/index.ts';
import type { Dashboard } from '../../shared/wire/dashboard.ts';
import { type Command, type Context, Exit } from '../command.ts';
import type { Output } from '../output.ts';
import { renderTop } from '../top-frame.ts';

const REFRESH_MS = 1000;
/** Alternate screen on, cursor hidden; and back. */
const ENTER = '\x1b[?1049h\x1b[?25l';
const LEAVE = '\x1b[?25h\x1b[?1049l';

function width(out: Output): number {
  const cols = (out.stdout as { columns?: number }).columns;
  return cols !== undefined && cols > 20 ? cols : 120;
}

function draw(out: Output, d: Dashboard, json: boolean, tty: boolean): void {
  if (json) return out.json(d);
  const lines = renderTop(d, out.out, width(out));
  if (!tty) return out.write(`${lines.join('\n')}\n\n`);
  const known = (out.stdout as { rows?: number }).rows;
  // A terminal that reports no size (some ptys say 0) gets the whole frame.
  const rows = known !== undefined && known > 4 ? known : lines.length + 2;
  const shown = [...lines.slice(0, Math.max(1, rows - 2)), '', out.out.dim('q or Ctrl-C quits')];
  out.write(`\x1b[H${shown.join('\x1b[K\n')}\x1b[K\x1b[J`);
}

/** Redraws every second until q, Ctrl-C or SIGINT; rejects (screen restored) when the daemon fails it. */
function live(client: AgentdClient, out: Output, json: boolean): Promise<number> {
  const stdin = process.stdin;
  const tty = out.stdout.isTTY === true && !json;
  return new Promise<number>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;
    const stop = (err?: unknown): void => {
      if (stopped) return;
      stopped = true;
      clearTimeout(timer);
      stdin.off('data', onKey);
      if (stdin.isTTY) stdin.setRawMode(false);
      stdin.pause();
      // A paused pipe still holds the event loop open: let go of it so agentctl exits.
      (stdin as { unref?: () => void }).unref?.();
      process.off('SIGINT', onSignal);
      if (tty) out.write(LEAVE);
      if (err === undefined) resolve(Exit.Ok);
      else reject(err);
    };
    // Raw mode on a terminal: each key arrives alone (Ctrl-C as \x03). From a pipe, lines do.
    const onKey = (chunk: Buffer): void => {
      if (/[qQ\x03]/.test(chunk.toString('latin1'))) stop();
    };
    const onSignal = (): void => stop();
    const tick = async (): Promise<void> => {
      try {
        const d = await client.call('get_dashboard', {});
        if (stopped) return;
        draw(out, d, json, tty);
      } catch (err) {
        return stop(err);
      }
      if (!stopped) timer = setTimeout(() => void tick(), REFRESH_MS);
    };
    if (tty) out.write(ENTER);
    if (stdin.isTTY) stdin.setRawMode(true);
    stdin.on('data', onKey);
    stdin.resume();
    process.on('SIGINT', onSignal);
    void tick();
  });
}

export const top: Command = {
  name: 'top',
  usage: '',
  summary: 'the live view: turns/s, latency, shards, busiest conversations, agents, failed turns, MCP servers, cluster (q quits)',
  details: 'Redraws every second on the terminal\'s alternate screen; q or Ctrl-C quits. Without a terminal (a pipe), a frame a second is printed and a line holding q on stdin quits. --once prints one frame and exits; --json prints the snapshot (get_dashboard) as one JSON line, once with --once, else one a second.',
  example: 'agentctl top',
  options: ['once'],
  arity: [0, 0],
  async run({ client, json, out, flags }: Context) {
    if (flags.once !== true) return live(client, out, json);
    const d = await client.call('get_dashboard', {});
    if (json) return out.json(d);
    for (const line of renderTop(d, out.out, width(out))) out.line(line);
  },
};
