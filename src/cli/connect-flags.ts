/**
 * The connection flags every agentctl command takes, and how they become
 * client connect options. Kept in one place so transports and credentials
 * can be added here alone.
 */
import type { ConnectOptions } from '../client/index.ts';
import { defaultHome } from '../client/connect-options.ts';
import { UsageError } from './usage-error.ts';

export const CONNECT_FLAGS = {
  socket: { type: 'string' },
  tcp: { type: 'string' },
  token: { type: 'string' },
  home: { type: 'string' },
  profile: { type: 'string' },
} as const;

export const CONNECT_HELP = `connection (default: the Unix socket $AGENTD_HOME/run/agentd.sock, else ~/.agentd/run/agentd.sock):
  --socket PATH        connect to this Unix socket
  --home DIR           the daemon's home, whose run/agentd.sock is used
  --tcp HOST:PORT      connect over TCP instead
  --token T            the daemon's token, for TCP (default $AGENTD_TOKEN, else the
                       token file of --home / $AGENTD_HOME / ~/.agentd)
  --profile NAME       the socket, home, tcp and token saved under NAME (agentctl
                       profile add); flags given beside it win`;

export interface ConnectFlagValues {
  socket?: string | undefined;
  tcp?: string | undefined;
  token?: string | undefined;
  home?: string | undefined;
  profile?: string | undefined;
}

/** Turns the flags (and $AGENTD_TOKEN) into connect options; the client fills in the default socket. */
export function connectOptionsFromFlags(values: ConnectFlagValues, env: NodeJS.ProcessEnv = process.env): ConnectOptions {
  if (values.tcp !== undefined) {
    const m = /^(.*):(\d+)$/.exec(values.tcp);
    if (m === null) throw new UsageError(`--tcp must be HOST:PORT, got "${values.tcp}"`);
    const token = values.token || env.AGENTD_TOKEN || undefined; // empty means unset, as for agentd
    // Without a token, the client reads the home's token file.
    const home = values.home ?? defaultHome(env);
    return { host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]), home, ...(token !== undefined ? { token } : {}) };
  }
  if (values.socket !== undefined) return { path: values.socket };
  return values.home !== undefined ? { home: values.home } : {};
}
