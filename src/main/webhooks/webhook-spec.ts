/**
 * What a webhook is: `create_webhook`'s arguments checked into the record the
 * store holds (an http(s) URL on an allowed host, known event kinds, a
 * secret), how it is listed (never with its secret), and how a delivery is
 * signed.
 */
import { createHmac } from 'node:crypto';
import { AgentdError, Code } from '../../shared/errors.ts';
import { isValidAgentName } from '../../shared/config.ts';
import type { WebhookDelivery, WebhookInfo } from '../../shared/wire/webhooks.ts';
import type { DeliveryRecord, WebhookRecord } from '../../storage/webhook-calls.ts';
import type { OpArgs } from '../ops/op-args.ts';
import { checkName } from '../schedules/schedule-spec.ts';

/**
 * The kinds a webhook may ask for: `turn_end` is the agent event `done` (a
 * turn ended, however it ended); the others are agent events of the same
 * name, but `approval_required`, which is the agent event `waiting`.
 */
export const WEBHOOK_EVENT_KINDS = ['turn_end', 'approval_required', 'tool_start', 'tool_result', 'chain_cut'] as const;
/** The agent event kind each webhook kind is taken from, where the names differ. */
export const AGENT_EVENT_OF: Readonly<Record<string, string>> = { turn_end: 'done', approval_required: 'waiting' };
export const DEFAULT_MAX_ATTEMPTS = 8;
const MAX_ATTEMPTS_CAP = 100;
const MIN_SECRET = 16;
const MAX_SECRET = 1024;
const MAX_URL = 2048;
const OP = 'create_webhook';

function bad(message: string): AgentdError {
  return new AgentdError(Code.BadRequest, `${OP}.${message}`);
}

/** True when `host` is one of `allowed`: a name exactly, or under a `*.domain` entry. Empty `allowed`: any host. */
export function hostAllowed(host: string, allowed: readonly string[]): boolean {
  if (allowed.length === 0) return true;
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  return allowed.some((a) => {
    const rule = a.toLowerCase();
    return rule.startsWith('*.') ? h.endsWith(rule.slice(1)) : h === rule;
  });
}

function checkUrl(raw: string, allowedHosts: readonly string[]): string {
  if (raw.length > MAX_URL) throw bad(`url must be at most ${MAX_URL} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw bad(`url is not a URL: ${JSON.stringify(raw.slice(0, 100))}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw bad(`url must be http:// or https://, got ${url.protocol}`);
  if (url.username !== '' || url.password !== '') throw bad('url must not hold credentials: the receiver checks the signature instead');
  if (!hostAllowed(url.hostname, allowedHosts)) throw bad(`url host "${url.hostname}" is not allowed by the daemon's webhook_hosts setting`);
  return url.toString();
}

function stringList(args: OpArgs<'create_webhook'>, field: 'events' | 'agents'): string[] | null {
  const v = args.raw(field);
  if (v === undefined || v === null) return null;
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw bad(`${field} must be a list of strings`);
  return [...new Set(v as string[])];
}

export function webhookFromArgs(args: OpArgs<'create_webhook'>, allowedHosts: readonly string[], now: number): WebhookRecord {
  const name = checkName(OP, args.nonEmptyStr('name'));
  const url = checkUrl(args.nonEmptyStr('url'), allowedHosts);
  const events = stringList(args, 'events');
  if (events === null || events.length === 0) throw bad(`events must list at least one of ${WEBHOOK_EVENT_KINDS.join(', ')}`);
  for (const e of events) if (!(WEBHOOK_EVENT_KINDS as readonly string[]).includes(e)) throw bad(`events: "${e.slice(0, 64)}" is not an event kind; the kinds are ${WEBHOOK_EVENT_KINDS.join(', ')}`);
  const agents = stringList(args, 'agents');
  for (const a of agents ?? []) if (!isValidAgentName(a)) throw bad(`agents: "${a.slice(0, 64)}" is not an agent name`);
  const secret = args.nonEmptyStr('secret');
  if (secret.length < MIN_SECRET || secret.length > MAX_SECRET) throw bad(`secret must be ${MIN_SECRET} to ${MAX_SECRET} characters, got ${secret.length}`);
  const maxAttempts = args.optUint('max_attempts') ?? DEFAULT_MAX_ATTEMPTS;
  if (maxAttempts < 1 || maxAttempts > MAX_ATTEMPTS_CAP) throw bad(`max_attempts must be from 1 to ${MAX_ATTEMPTS_CAP}, got ${maxAttempts}`);
  return { name, url, events: JSON.stringify(events), agents: agents === null || agents.length === 0 ? null : JSON.stringify(agents), secret, max_attempts: maxAttempts, created_at: now };
}

export function webhookInfo(r: WebhookRecord, dropped: number): WebhookInfo {
  return { name: r.name, url: r.url, events: JSON.parse(r.events) as string[], agents: r.agents === null ? null : (JSON.parse(r.agents) as string[]), max_attempts: r.max_attempts, created_at: new Date(r.created_at).toISOString(), dropped };
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function deliveryInfo(d: DeliveryRecord): WebhookDelivery {
  return {
    id: d.id, webhook: d.webhook, kind: d.kind, agent: d.agent, sender: d.sender, status: d.status, attempts: d.attempts, last_error: d.last_error,
    created_at: new Date(d.created_at).toISOString(), next_attempt_at: d.status === 'pending' ? iso(d.next_attempt_at) : null, finished_at: iso(d.finished_at),
  };
}

/** `X-Agentd-Signature`: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" under the secret>`. */
export function signature(secret: string, body: string, unixSeconds: number): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}
