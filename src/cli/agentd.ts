/**
 * `agentd`: starts the daemon.
 *
 *   agentd [--home DIR] [--workers N] [--tcp HOST:PORT | --tcp off] [--tcp-insecure] [--metrics HOST:PORT] [--http HOST:PORT] [--config FILE] [--log-level LEVEL] [--store URL] [--cluster NATS_URL --node NAME]
 */
import { parseArgs } from 'node:util';
import { ConfigError, resolveConfig, type StartFlags } from '../main/config-load.ts';
import { startDaemon } from '../main/daemon.ts';
import { VERSION } from '../shared/version.ts';
import { logLevelProblem } from './log-level.ts';

const USAGE = `usage: agentd [--home DIR] [--workers N] [--tcp HOST:PORT | --tcp off] [--tcp-insecure] [--metrics HOST:PORT] [--http HOST:PORT] [--config FILE] [--log-level LEVEL] [--store URL] [--cluster NATS_URL --node NAME]`;

function fail(message: string, exitCode = 1): never {
  process.stderr.write(`agentd: ${message}\n`);
  process.exit(exitCode);
}

const OPTIONS = {
  home: { type: 'string' },
  workers: { type: 'string' },
  tcp: { type: 'string' },
  metrics: { type: 'string' },
  http: { type: 'string' },
  'tcp-insecure': { type: 'boolean' },
  config: { type: 'string' },
  'log-level': { type: 'string' },
  store: { type: 'string' },
  cluster: { type: 'string' },
  node: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; strict: true }>>['values'];

/** The command line as start flags; a bad flag exits with its message. */
function startFlags(values: Values): StartFlags {
  const flags: StartFlags = {};
  if (values.home !== undefined) flags.home = values.home;
  if (values.tcp !== undefined) flags.tcp = values.tcp;
  if (values.metrics !== undefined) flags.metrics = values.metrics;
  if (values.http !== undefined) flags.http = values.http;
  if (values['tcp-insecure']) flags.tcpInsecure = true;
  if (values.config !== undefined) flags.config = values.config;
  if (values['log-level'] !== undefined) flags.logLevel = values['log-level'];
  if (values.store !== undefined) flags.store = values.store;
  if (values.cluster !== undefined) flags.cluster = values.cluster;
  if (values.node !== undefined) flags.node = values.node;
  const badLevel = logLevelProblem(values['log-level']);
  if (badLevel !== null) fail(badLevel, 2);
  if (values.workers !== undefined) {
    const n = Number(values.workers);
    if (!Number.isSafeInteger(n) || n < 1) fail(`--workers must be an integer >= 1, got "${values.workers}"`);
    flags.workers = n;
  }
  return flags;
}

/** Stops the daemon once on SIGINT or SIGTERM, exiting 0 when it closed cleanly. */
function stopOnSignals(daemon: Awaited<ReturnType<typeof startDaemon>>): void {
  let signalled = false;
  const stop = (signal: string): void => {
    if (signalled) return;
    signalled = true;
    daemon.log.info({ signal }, 'shutting down');
    daemon.close().then(
      () => process.exit(0),
      (err: unknown) => {
        daemon.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  // SIGHUP: read agentd.json again and apply what can change live (docs/operations.md, "Changes without a restart").
  process.on('SIGHUP', () => void daemon.reload());
}

async function main(): Promise<void> {
  let values: Values;
  try {
    ({ values } = parseArgs({ options: OPTIONS, strict: true }));
  } catch (err) {
    fail(`${(err as Error).message}\n${USAGE}`);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (values.version) {
    process.stdout.write(`${VERSION}\n`);
    return;
  }
  const flags = startFlags(values);

  let config;
  try {
    config = resolveConfig(flags);
  } catch (err) {
    if (err instanceof ConfigError) fail(`bad configuration: ${err.message}`);
    throw err;
  }

  let daemon;
  try {
    daemon = await startDaemon(config, () => resolveConfig(flags));
  } catch (err) {
    fail((err as Error).message);
  }
  const { socketPath, tcp } = daemon.addresses;
  process.stdout.write(
    `agentd ${VERSION} ready: unix ${socketPath}${tcp ? `, tcp ${tcp.host}:${tcp.port}` : ''}, ${config.workers} workers\n`,
  );
  stopOnSignals(daemon);
}

await main();
