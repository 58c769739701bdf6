/**
 * The harness host (PROTOCOL §5): the one door from a shard's harness back
 * into the daemon. A harness holds only the capability functions it was
 * granted; each call lands here, becomes the client message of its
 * operation, runs through the same dispatch that serves sockets, and its one
 * reply is narrowed before it is returned:
 *
 *   peers.list()          list_agents      the other agents, every agent_info.config cleared
 *   sessions.search(q, o) search_sessions  `agent` forced to the calling agent, and
 *                                          `sender` to the calling turn's sender unless
 *                                          the agent has `session_search: "agent"`
 *   skills.list()         list_skills      filtered to the agent's `skills`, if any
 *   skills.get(name)      get_skill        refused (404) outside that list
 *
 * Nothing destructive, nothing that spends tokens, nothing that answers on
 * someone else's behalf has a capability. The caller (agent and sender) is
 * the running turn's pair, set by the shard: a tool's arguments cannot name
 * another counterparty, so one sender's turn never sees another's memory.
 * Guests run without tools; a turn fired by the bus has the sender
 * `event:<source>` and so sees only that source's earlier fired turns.
 */
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import * as Comlink from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { AgentdError, Code, isCode } from '../../shared/errors.ts';
import { isPlainMap } from '../../shared/args.ts';
import type { AgentConfig, Capability } from '../../shared/config.ts';
import type { AgentRegistry } from '../agent-registry.ts';
import type { Dispatch, Requester } from '../dispatch.ts';
import type { CapabilityCaller, HarnessHostApi } from '../../shared/threads/harness-host-api.ts';


/** Requester ids of the host: above any connection id, so shard frames never route here. */
const HOST_ID_BASE = 0x7fff_0000;

type Pending = { resolve(body: Record<string, unknown>): void };

export class HarnessHost {
  readonly #dispatch: Dispatch;
  readonly #agents: AgentRegistry;
  readonly #pending = new Map<number, Pending>();
  #nextReq = 1;
  readonly #requester: Requester;

  constructor(dispatch: Dispatch, agents: AgentRegistry) {
    this.#dispatch = dispatch;
    this.#agents = agents;
    this.#requester = {
      id: HOST_ID_BASE,
      reply: (req, value) => {
        const p = this.#pending.get(req);
        this.#pending.delete(req);
        p?.resolve(value as Record<string, unknown>);
      },
      // The host opens no streams: the observer side is never used.
      backlog: () => 0,
      write: () => {},
    };
  }

  /** A port for a shard; the other end is served by this host until the shard's thread ends. */
  portForShard(): MessagePort {
    const { port1, port2 } = new MessageChannel();
    const api: HarnessHostApi = { call: (who, capability, args) => this.call(who, capability, args) };
    Comlink.expose(api, nodeEndpoint(port1));
    port1.unref(); // the host must not keep the daemon alive
    return port2;
  }

  /** Runs one client message through dispatch and returns its reply body, or throws its error. */
  #run(op: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
    const req = this.#nextReq++;
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      this.#pending.set(req, {
        resolve: (body) => {
          const e = body.error;
          if (isPlainMap(e)) reject(new AgentdError(isCode(e.code) ? e.code : Code.Internal, String(e.message)));
          else resolve(body);
        },
      });
      this.#dispatch(this.#requester, req, { [op]: args });
    });
  }

  async call(who: CapabilityCaller, capability: Capability, args: unknown[]): Promise<unknown> {
    try {
      return await this.#call(who, capability, args);
    } catch (err) {
      // comlink drops error classes: keep the code in the message.
      if (err instanceof AgentdError) throw new Error(`${err.code}: ${err.message}`);
      throw err;
    }
  }

  async #call(who: CapabilityCaller, capability: Capability, args: unknown[]): Promise<unknown> {
    const { agent } = who;
    const config = this.#agents.get(agent);
    if (config === undefined) throw new AgentdError(Code.NotFound, `unknown agent "${agent}"`);
    const allowed = config.skills;
    switch (capability) {
      case 'peers.list': {
        const { agent_list } = (await this.#run('list_agents', {})) as { agent_list: { agents: Record<string, unknown>[] } };
        return agent_list.agents.filter((a) => a.name !== agent).map((a) => ({ ...a, config: {} }));
      }
      case 'sessions.search': {
        const [query, opts] = args;
        const o = isPlainMap(opts) ? opts : {};
        const scope = { agent, sender: searchSender(config, who, o) };
        const { session_hits } = (await this.#run('search_sessions', { ...o, query: typeof query === 'string' ? query : '', ...scope })) as { session_hits: { hits: unknown[] } };
        return session_hits.hits;
      }
      case 'skills.list': {
        const { skill_list } = (await this.#run('list_skills', {})) as { skill_list: { skills: { name: string; description: string }[] } };
        return allowed.length === 0 ? skill_list.skills : skill_list.skills.filter((s) => allowed.includes(s.name));
      }
      case 'skills.get': {
        const name = typeof args[0] === 'string' ? args[0] : '';
        if (allowed.length > 0 && !allowed.includes(name)) throw new AgentdError(Code.NotFound, `skill "${name}" is not one of this agent's skills`);
        const { skill_body } = (await this.#run('get_skill', { name })) as { skill_body: { name: string; body: string } };
        return skill_body;
      }
      default:
        throw new AgentdError(Code.BadRequest, `unknown capability "${String(capability)}"`);
    }
  }
}

/**
 * The sender a capability search is held to: the calling turn's, unless the
 * agent shares memory across counterparties (`session_search: "agent"`), where
 * the harness may still narrow to one sender itself. Never empty: an empty
 * sender would mean "every sender" to search_sessions.
 */
function searchSender(config: AgentConfig, who: CapabilityCaller, opts: Record<string, unknown>): string | null {
  if (config.session_search === 'agent') return typeof opts.sender === 'string' && opts.sender !== '' ? opts.sender : null;
  if (typeof who.sender !== 'string' || who.sender === '') throw new AgentdError(Code.BadRequest, 'sessions.search needs the calling turn\'s sender');
  return who.sender;
}
