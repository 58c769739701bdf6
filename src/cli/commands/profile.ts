/** Saved connection profiles: profile add, list, remove (the file is described in profiles.ts). */
import { type Command, type LocalContext, UsageError } from '../command.ts';
import { connectOptionsFromFlags } from '../connect-flags.ts';
import { checkProfileName, loadProfiles, type Profile, profilesPath, saveProfiles } from '../profiles.ts';
import { didYouMean } from '../suggest.ts';

/** The profile the connection flags describe; refuses one that would not connect. */
function profileFromFlags(flags: LocalContext['flags']): Profile {
  const { socket, home, tcp, token } = flags;
  if (socket === undefined && home === undefined && tcp === undefined) throw new UsageError('profile add needs an address: --socket PATH, --home DIR or --tcp HOST:PORT (with --token T or --home DIR)');
  if (socket !== undefined && tcp !== undefined) throw new UsageError('profile add takes --socket or --tcp, not both');
  if (flags.profile !== undefined) throw new UsageError('profile add takes no --profile: name the new profile as its argument');
  connectOptionsFromFlags({ socket, home, tcp, token }, {}); // the same checks a connection makes (--tcp HOST:PORT)
  const profile: Profile = {};
  if (socket !== undefined) profile.socket = socket;
  if (home !== undefined) profile.home = home;
  if (tcp !== undefined) profile.tcp = tcp;
  if (token !== undefined) profile.token = token;
  return profile;
}

const add: Command = {
  name: 'profile add',
  usage: 'NAME',
  summary: 'save the connection flags given (--socket, --home, --tcp, --token) as a profile',
  details: 'Replaces a profile of that name. The file is $XDG_CONFIG_HOME/agentd/profiles.json (else\n~/.config/agentd/profiles.json), written with mode 0600 since it may hold a token.',
  example: 'agentctl profile add prod --tcp agentd.internal:6688 --token "$PROD_TOKEN"',
  local: true,
  arity: [1, 1],
  async run({ args, flags, json, out, env }: LocalContext) {
    const name = args[0]!;
    checkProfileName(name);
    const profile = profileFromFlags(flags);
    const path = profilesPath(env);
    const profiles = loadProfiles(path);
    const replaced = name in profiles;
    saveProfiles(path, { ...profiles, [name]: profile });
    if (json) out.json({ name, path, replaced });
    else out.line(`${replaced ? 'replaced' : 'saved'} profile ${name} in ${path}; use it with agentctl --profile ${name} COMMAND`);
  },
};

function describe(p: Profile): string {
  const where = p.tcp !== undefined ? `tcp ${p.tcp}` : p.socket !== undefined ? `socket ${p.socket}` : `home ${p.home}`;
  const extra = [p.tcp !== undefined && p.home !== undefined ? `home ${p.home}` : '', p.token !== undefined ? 'token saved' : ''].filter((s) => s !== '');
  return [where, ...extra].join(', ');
}

const list: Command = {
  name: 'profile list',
  usage: '',
  summary: 'the saved connection profiles (tokens are not shown)',
  example: 'agentctl profile list',
  local: true,
  arity: [0, 0],
  async run({ json, out, env }: LocalContext) {
    const path = profilesPath(env);
    const profiles = loadProfiles(path);
    if (json) {
      out.json(Object.entries(profiles).map(([name, p]) => ({ name, ...p, ...(p.token !== undefined ? { token: '(saved)' } : {}) })));
      return;
    }
    if (Object.keys(profiles).length === 0) return out.note(`no profiles in ${path} (agentctl profile add NAME --tcp HOST:PORT makes one)`);
    out.table([['NAME', 'CONNECTS TO'], ...Object.entries(profiles).map(([name, p]) => [name, describe(p)])]);
  },
};

const remove: Command = {
  name: 'profile remove',
  usage: 'NAME',
  summary: 'forget a saved profile',
  example: 'agentctl profile remove prod',
  local: true,
  arity: [1, 1],
  async run({ args, json, out, env }: LocalContext) {
    const name = args[0]!;
    const path = profilesPath(env);
    const profiles = loadProfiles(path);
    if (!(name in profiles)) throw new UsageError(`no profile "${name}" in ${path}${didYouMean(name, Object.keys(profiles))}`);
    const { [name]: _gone, ...rest } = profiles;
    saveProfiles(path, rest);
    if (json) out.json({ name, removed: true });
    else out.line(`removed profile ${name}`);
  },
};

export const profileCommands: Command[] = [add, list, remove];
