/**
 * Saved connection profiles: `agentctl --profile NAME` takes the address and
 * token from a small JSON file instead of the command line. The file is
 * written 0600 because a profile may hold a token.
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { UsageError } from './command.ts';
import type { ConnectFlagValues } from './connect-flags.ts';
import { didYouMean } from './suggest.ts';

const ProfileSchema = z.strictObject({
  socket: z.string().min(1).optional(),
  home: z.string().min(1).optional(),
  tcp: z.string().min(1).optional(),
  token: z.string().min(1).optional(),
});
const FileSchema = z.strictObject({ profiles: z.record(z.string(), ProfileSchema) });

export type Profile = z.infer<typeof ProfileSchema>;
export type Profiles = Record<string, Profile>;

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** `$XDG_CONFIG_HOME/agentd/profiles.json`, else `~/.config/agentd/profiles.json`. */
export function profilesPath(env: NodeJS.ProcessEnv = process.env): string {
  const config = env.XDG_CONFIG_HOME !== undefined && env.XDG_CONFIG_HOME !== '' ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(config, 'agentd', 'profiles.json');
}

export function checkProfileName(name: string): void {
  if (!NAME.test(name)) throw new UsageError(`a profile name is letters, digits, ".", "_" and "-" (at most 64), got "${name}"`);
}

/** The profiles in `path`; none when the file does not exist. */
export function loadProfiles(path: string): Profiles {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new UsageError(`cannot read the profiles file ${path}: ${(err as Error).message}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`the profiles file ${path} is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = FileSchema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new UsageError(`the profiles file ${path} is not {"profiles": {NAME: {socket, home, tcp, token}}}: ${issue.path.join('.') || '(top)'}: ${issue.message}`);
  }
  return parsed.data.profiles;
}

/** Writes the file whole (through a temporary file, so a reader never sees half of it), mode 0600. */
export function saveProfiles(path: string, profiles: Profiles): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify({ profiles }, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600); // the mode above is masked by the umask
  renameSync(tmp, path);
}

/** The named profile, or a usage error naming the close ones. */
export function findProfile(name: string, path: string): Profile {
  const profiles = loadProfiles(path);
  const found = profiles[name];
  if (found !== undefined) return found;
  const names = Object.keys(profiles);
  if (names.length === 0) throw new UsageError(`unknown profile "${name}": there are no profiles in ${path} (agentctl profile add ${name} --tcp HOST:PORT --token T makes one)`);
  throw new UsageError(`unknown profile "${name}"${didYouMean(name, names)}; the profiles are ${names.join(', ')} (agentctl profile list)`);
}

/**
 * The connection flags with the profile under them: an address given on the
 * command line (--socket, --home or --tcp) replaces the profile's whole
 * address, and --token its token.
 */
export function withProfile(flags: ConnectFlagValues, profile: Profile): ConnectFlagValues {
  const addressGiven = flags.socket !== undefined || flags.home !== undefined || flags.tcp !== undefined;
  const address = addressGiven ? { socket: flags.socket, home: flags.home, tcp: flags.tcp } : { socket: profile.socket, home: profile.home, tcp: profile.tcp };
  return { ...address, token: flags.token ?? profile.token };
}
