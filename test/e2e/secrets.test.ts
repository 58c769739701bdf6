/**
 * Issue 10, item 4: secrets never leave. A provider whose 401 body quotes the
 * Authorization header, one that streams its key back, and a tool whose output
 * holds configured secrets: none of the secrets reaches a reply, a stream, an
 * observer, the database (file and WAL) or the daemon's log.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentdClient, StreamEvent } from '../../src/client/index.ts';
import { REDACTED } from '../../src/shared/redact.ts';
import { cleanup, collect, makeHome, startDaemon, type Daemon } from '../helpers/daemon.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.ts';

const KEY = 'sk-proj-Zq81vXnot4you7TqW';
const ORG = 'org-secret-header-5521';
const MCP = 'ghp_mcpEnvToken_0099xyz';
const UNCONFIGURED = 'tok_unconfigured_777';
const SECRETS = [KEY, ORG, MCP, UNCONFIGURED];

let api: FakeOpenAI;
let d: Daemon;
let c: AgentdClient;
/** Every frame body any of our clients received. */
const received: Buffer[] = [];
const observed: unknown[] = [];

beforeAll(async () => {
  api = await startFakeOpenAI(['leak'], { modelsUnauthorized: true });
  const home = makeHome();
  // A skill is the simplest tool output to control: the `skill` tool returns its body.
  mkdirSync(join(home, 'skills', 'creds'), { recursive: true });
  writeFileSync(
    join(home, 'skills', 'creds', 'SKILL.md'),
    `---\nname: creds\ndescription: d\n---\nkey ${KEY}, mcp ${MCP}, header "Authorization: Bearer ${UNCONFIGURED}"\n`,
  );
  const fake = { provider: 'fake' };
  d = await startDaemon({
    home,
    env: { FAKE_API_KEY: KEY },
    config: {
      log_level: 'debug',
      providers: { fake: { type: 'openai', base_url: api.url, api_key_env: 'FAKE_API_KEY', headers: { 'x-org-secret': ORG } } },
      agents: {
        assistant: { ...fake, model: 'unauthorized' },
        leaky: { ...fake, model: 'leak' },
        tooly: { model: 'echo', mcps: { gh: { command: 'gh-mcp', env: { GH_TOKEN: MCP } } } },
      },
    },
  });
  const onRawFrame = (_id: number, _flags: number, body: Uint8Array): void => void received.push(Buffer.from(body));
  c = await d.client({ onRawFrame });
  const watcher = await d.client({ onRawFrame });
  void (async () => {
    for await (const ev of watcher.events()) observed.push(ev);
  })().catch(() => {});
});
afterAll(async () => {
  await cleanup(d);
  await api.close();
});

const end = (evs: StreamEvent[]) => evs.at(-1) as Extract<StreamEvent, { type: 'end' }>;
const noSecret = (text: string, where: string, secrets = SECRETS): void => {
  for (const s of secrets) expect(text.includes(s), `${where} holds ${s}`).toBe(false);
};

describe('secrets never leave', () => {
  it('a 401 quoting the Authorization header: stream end.error, send 500, compact and list_models errors are redacted', async () => {
    const evs = await collect(c.stream('assistant', 'hello', { sender: 's1' }));
    expect(end(evs)).toMatchObject({ stop_reason: 'error', error: expect.stringContaining(`"authorization: ${REDACTED}"`) });
    noSecret(end(evs).error, 'end.error');

    const sent = await c.send('assistant', 'hello', { sender: 's2' }).catch((e: { code: number; message: string }) => e);
    expect(sent).toMatchObject({ code: 500, message: expect.stringContaining(`key ${REDACTED} is revoked`) });

    // The failed turn stored its user message, so there is a conversation to compact.
    const compacted = await c.request('compact', { agent: 'assistant', sender: 's1' }).catch((e: { code: number; message: string }) => e);
    expect(compacted).toMatchObject({ code: 500, message: expect.stringContaining(REDACTED) });
    noSecret((compacted as { message: string }).message, 'compact error');

    const models = await c.request('list_models').catch((e: { code: number; message: string }) => e);
    expect(models).toMatchObject({ code: 500, message: expect.stringContaining(REDACTED) });
    noSecret((models as { message: string }).message, 'list_models error');
  });

  it('a provider streaming its key and header back, split across deltas, streams and stores it redacted', async () => {
    const evs = await collect(c.stream('leaky', 'tell me', { sender: 's3' }));
    const text = (type: string) => evs.filter((e) => e.type === type).map((e) => (e as { content: string }).content).join('');
    expect(text('chunk')).toBe(`your key is ${REDACTED}, twice: ${REDACTED}.`);
    expect(text('thinking')).toBe(`org ${REDACTED} ok`);
    expect(end(evs).stop_reason).toBe('text');
    const h = await c.request('get_conversation_history', { agent: 'leaky', sender: 's3' });
    expect(JSON.stringify(h)).toContain(`your key is ${REDACTED}`);
  });

  it('tool output with configured values and an unconfigured Bearer token is redacted in the stream and the history', async () => {
    const evs = await collect(c.stream('tooly', '/call skill {"name":"creds"}', { sender: 's4' }));
    const result = evs.find((e) => e.type === 'tool_result') as Extract<StreamEvent, { type: 'tool_result' }>;
    expect(result.output).toBe(`key ${REDACTED}, mcp ${REDACTED}, header "Authorization: ${REDACTED}"\n`);
    const h = await c.request('get_conversation_history', { agent: 'tooly', sender: 's4' });
    noSecret(JSON.stringify(h), 'history');
  });

  it('none of the secrets is in any reply, observed event, the database, its WAL, or the log', async () => {
    // Every turn above has ended (its `end` or reply was awaited), so it is committed and observed.
    expect(observed.length).toBeGreaterThan(0);
    noSecret(Buffer.concat(received).toString('latin1'), 'a frame');
    noSecret(JSON.stringify(observed), 'an observed event');
    const dbFiles = readdirSync(d.home).filter((f) => f.startsWith('agentd.db'));
    expect(dbFiles).toContain('agentd.db-wal');
    // The agent's MCP settings are stored with the agent by design (its config row); that the
    // value reached no message is checked through the history above.
    for (const f of dbFiles) noSecret(readFileSync(join(d.home, f)).toString('latin1'), f, [KEY, ORG, UNCONFIGURED]);
    expect(d.stderr()).toContain('listing models failed'); // the log saw the provider's error...
    noSecret(d.stderr(), 'the log'); // ...redacted
  });
});
