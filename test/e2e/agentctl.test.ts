/**
 * agentctl against a real daemon: every command, its human output, --json,
 * and the exit codes. Each test uses its own agent or sender, so they run
 * concurrently (each CLI run is a process start).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentdClient, StreamEvent } from '../../src/client/index.ts';
import { ctl, finished, spawnCtl, untilOutput } from '../helpers/cli.ts';
import { cleanup, collect, makeHome, runAgentd, startDaemon, waitFor, type Daemon } from '../helpers/daemon.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.ts';

// Every CLI run starts a Node process (which compiles TypeScript when dist/ is
// stale): on a loaded machine a chain of them takes far longer than one turn does.
vi.setConfig({ testTimeout: 180_000 });

let d: Daemon;
let api: FakeOpenAI;
let c: AgentdClient;
const run = (...args: string[]) => ctl(d.socketPath, args);
const json = (text: string): any => JSON.parse(text);

beforeAll(async () => {
  api = await startFakeOpenAI(['text', 'reasoning']);
  const home = makeHome({
    providers: { fake: { type: 'openai', base_url: api.url, api_key_env: 'FAKE_API_KEY' } },
    agents: {
      assistant: { model: 'echo', description: 'the default agent' },
      helper: { model: 'echo' },
      thinker: { provider: 'fake', model: 'reasoning' },
      slow: { model: 'echo', echo: { delay_ms: 1_000 } }, // the most echo allows: 600 words take 10 minutes
      watched: { model: 'echo' },
    },
  });
  mkdirSync(join(home, 'skills', 'greet'), { recursive: true });
  writeFileSync(join(home, 'skills', 'greet', 'SKILL.md'), '---\nname: greet\ndescription: How to greet people\n---\nSay hello first.\n');
  d = await startDaemon({ home, env: { FAKE_API_KEY: 'k' } });
  c = await d.client();
});
afterAll(async () => {
  await c?.close();
  await cleanup(d);
  await api?.close();
});

describe.concurrent('turns', () => {
  it('stream prints the answer; thinking goes to stderr apart from it; --guest answers as the guest', async () => {
    const [plain, thinking, guest, asJson] = await Promise.all([
      run('stream', 'assistant', 'hello', 'stream', 'world', '--sender', 'st'),
      run('stream', 'thinker', 'why?', '--sender', 'st'),
      run('stream', 'assistant', 'as', 'guest', '--sender', 'gu', '--guest', 'helper'),
      run('stream', 'assistant', 'two words', '--sender', 'js', '--json'),
    ]);
    expect(plain).toMatchObject({ code: 0, stdout: 'hello stream world\n', stderr: '' });
    expect(thinking.code).toBe(0);
    expect(thinking.stderr).toBe('thinking: Let me think.\n');
    expect(thinking.stdout).not.toContain('think');
    expect(thinking.stdout.length).toBeGreaterThan(1);
    expect(guest).toMatchObject({ code: 0, stdout: 'as guest\n' });
    const events = asJson.stdout.trim().split('\n').map(json) as StreamEvent[];
    expect(events.map((e) => e.type)).toEqual(['start', 'text_start', 'chunk', 'chunk', 'text_end', 'context_usage', 'end']);
    expect(plain.stdout + thinking.stdout).not.toContain('\x1b['); // no colour without a terminal
  });

  it('send prints the final answer, --json the response', async () => {
    const [text, asJson] = await Promise.all([
      run('send', 'assistant', 'sent', 'text', '--sender', 'se'),
      run('send', 'assistant', 'sent json', '--sender', 'se2', '--json'),
    ]);
    expect(text).toMatchObject({ code: 0, stdout: 'sent text\n' });
    expect(json(asJson.stdout)).toMatchObject({ agent: 'assistant', content: 'sent json', model: 'echo' });
  });

  it('kill cancels a running turn and says so; the cancelled stream exits 4 with the reason', async () => {
    const streaming = finished(spawnCtl(d.socketPath, ['stream', 'slow', 'never finishes '.repeat(300), '--sender', 'k']));
    await waitFor(async () => (await c.listActiveConversations({ agent: 'slow', sender: 'k' }))[0]?.running === true, 'the CLI\'s turn to run', 120_000);
    const killed = await run('kill', 'slow', '--sender', 'k');
    expect(killed).toMatchObject({ code: 0, stdout: 'cancelled the running and queued turns of slow/k (if any)\n' });
    const s = await streaming;
    expect(s.code).toBe(4);
    expect(s.stderr).toContain('agentctl: turn cancelled: cancelled by kill');
  });

  it('compact prints the summary', async () => {
    await c.send('assistant', 'compact me please', { sender: 'cp' });
    const r = await run('compact', 'assistant', '--sender', 'cp');
    expect(r).toMatchObject({ code: 0, stdout: 'summary: 2 messages; the user said: compact me please\n' });
  });
});

describe.concurrent('conversations', () => {
  it('history is a readable transcript, guests named', async () => {
    await c.send('assistant', 'first words', { sender: 'hi' });
    await collect(c.stream('assistant', 'guest words', { sender: 'hi', guest: 'helper' }));
    const [h, asJson] = await Promise.all([run('history', 'assistant', '--sender', 'hi'), run('history', 'assistant', '--sender', 'hi', '--json')]);
    expect(h.code).toBe(0);
    expect(h.stdout).toBe([
      'assistant/hi: "first words" (4 messages)',
      'user            first words',
      'assistant       first words',
      'user            guest words',
      'helper (guest)  guest words',
      '',
    ].join('\n'));
    expect(json(asJson.stdout).messages).toHaveLength(4);
  });

  it('conversations lists stored ones and, with --active, those in memory', async () => {
    await c.send('helper', 'listed here', { sender: 'cl' });
    const [stored, active, asJson] = await Promise.all([
      run('conversations', '--agent', 'helper', '--sender', 'cl'),
      run('conversations', '--active', '--agent', 'helper', '--sender', 'cl'),
      run('conversations', '--agent', 'helper', '--sender', 'cl', '--json'),
    ]);
    expect(stored.code).toBe(0);
    expect(stored.stdout).toMatch(/^CONVERSATION\s+MESSAGES\s+UPDATED\s+TITLE\nhelper\/cl\s+2\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+listed here\n$/);
    expect(active.stdout).toMatch(/^CONVERSATION\s+MESSAGES\s+ALIVE\s+STATE\s+TITLE\nhelper\/cl\s+2\s+\d+s\s+idle\s+listed here\n$/);
    expect(json(asJson.stdout).conversations).toEqual([expect.objectContaining({ agent: 'helper', sender: 'cl', message_count: 2 })]);
  });

  it('search shows snippets with the hit marked', async () => {
    await c.send('helper', 'the zebra crossing is closed', { sender: 'sr' });
    const [r, none, asJson] = await Promise.all([
      run('search', 'Zebra', '--agent', 'helper', '--context', '0'),
      run('search', 'nothingmatchesthis'),
      run('search', 'zebra', '--agent', 'helper', '--json'),
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^1\. helper\/sr {2}"the zebra crossing is closed" {2}updated \S+ \S+\n {2}> #0 user {6}the \*\*zebra\*\* crossing is closed\n$/);
    expect(none).toMatchObject({ code: 0, stdout: 'no conversation mentions "nothingmatchesthis"\n' });
    expect(json(asJson.stdout).hits[0]).toMatchObject({ agent: 'helper', sender: 'sr', msg_idx: 0 });
  });

  it('delete removes a conversation and says so; deleting it again is a 404 (exit 1)', async () => {
    await c.send('helper', 'delete me', { sender: 'dl' });
    expect(await run('delete', 'helper', '--sender', 'dl')).toMatchObject({ code: 0, stdout: 'deleted the conversation helper/dl\n' });
    const again = await run('delete', 'helper', '--sender', 'dl');
    expect(again.code).toBe(1);
    expect(again.stderr).toBe('agentctl: error 404: no conversation for agent "helper" and sender "dl"\n');
  });
});

describe.concurrent('agents, models, skills', () => {
  it('agents list and show', async () => {
    const [list, bare, show, asJson] = await Promise.all([run('agents', 'list'), run('agents'), run('agents', 'show', 'assistant'), run('agents', 'list', '--json')]);
    expect(list.code).toBe(0);
    expect(list.stdout.split('\n')[0]).toMatch(/^NAME\s+MODEL\s+DESCRIPTION$/);
    expect(list.stdout).toMatch(/\nassistant\s+echo\s+the default agent\n/);
    expect(bare.stdout).toMatch(/^NAME\s+MODEL\s+DESCRIPTION\n(.*\n)*assistant\s+echo\s+the default agent\n/);
    expect(show.stdout).toContain('assistant  the default agent\n');
    expect(show.stdout).toMatch(/ {2}model\s+echo\n/);
    expect(show.stdout).toContain('"system_prompt": ""');
    expect(json(asJson.stdout).agents.map((a: { name: string }) => a.name)).toContain('thinker');
  });

  it('agents create (JSON argument and @file), update with a merge patch, delete', async () => {
    const file = join(d.home, 'writer.json');
    writeFileSync(file, JSON.stringify({ description: 'from a file' }));
    const [inline, fromFile] = await Promise.all([run('agents', 'create', 'poet', '{"description": "writes verse"}'), run('agents', 'create', 'writer', `@${file}`)]);
    expect(inline).toMatchObject({ code: 0, stdout: 'created agent poet (model echo)\n' });
    expect(fromFile.code).toBe(0);
    expect((await c.getAgent('writer')).description).toBe('from a file');
    const updated = await run('agents', 'update', 'poet', '{"description": "writes better verse", "max_iterations": 3}', '--json');
    expect(json(updated.stdout)).toMatchObject({ name: 'poet', description: 'writes better verse', max_iterations: 3 });
    expect(await run('agents', 'delete', 'poet')).toMatchObject({ code: 0, stdout: 'deleted agent poet\n' });
    expect((await c.listAgents()).map((a) => a.name)).not.toContain('poet');
    const [bad, badJson] = await Promise.all([run('agents', 'create', 'x', '{"colour": 1}'), run('agents', 'create', 'y', '{not json')]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('agentctl: error 400: create_agent: config.colour is not a known option');
    expect(badJson.code).toBe(2);
    expect(badJson.stderr).toContain('CONFIG is not valid JSON');
  });

  it('models list marks the active one; models set points the default agent at one', async () => {
    const list = await run('models', 'list');
    expect(list.code).toBe(0);
    expect(list.stdout).toBe('* echo\n  reasoning\n  text\n');
    expect(await run('models', 'set', 'echo')).toMatchObject({ code: 0, stdout: 'active model: echo\n' });
    const missing = await run('models', 'set', 'no-such-model');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('error 404');
  });

  it('skills list and show', async () => {
    const [list, show, missing] = await Promise.all([run('skills', 'list'), run('skills', 'show', 'greet'), run('skills', 'show', 'nope')]);
    expect(list.stdout).toMatch(/^NAME\s+DESCRIPTION\ngreet\s+How to greet people\n$/);
    expect(show).toMatchObject({ code: 0, stdout: 'Say hello first.\n' });
    expect(missing).toMatchObject({ code: 1, stderr: 'agentctl: error 404: unknown skill "nope"\n' });
  });
});

describe.concurrent('event bus and agent events', () => {
  it('subscribe, subscriptions, publish, unsubscribe', async () => {
    const sub = await run('subscribe', 'cli.test', 'helper', '--once');
    expect(sub.code).toBe(0);
    const id = Number(/^subscription (\d+): cli\.test -> helper \(once\)\n$/.exec(sub.stdout)?.[1]);
    expect(id).toBeGreaterThan(0);
    const list = await run('subscriptions');
    expect(list.stdout).toMatch(new RegExp(`\\n${id}\\s+cli\\.test\\s+helper\\s+once\\n`));
    const second = json((await run('subscribe', 'cli.other', 'helper', '--json')).stdout) as { id: number };
    expect(await run('publish', 'cli.test', 'hello', 'bus')).toMatchObject({ code: 0, stdout: 'fired 1 subscription\n' });
    expect(await run('publish', 'cli.test', 'again')).toMatchObject({ code: 0, stdout: 'fired 0 subscriptions\n' });
    expect(await run('unsubscribe', String(second.id))).toMatchObject({ code: 0, stdout: `removed subscription ${second.id}\n` });
    const gone = await run('unsubscribe', String(second.id));
    expect(gone).toMatchObject({ code: 1, stderr: `agentctl: error 404: no subscription ${second.id}\n` });
  });

  it('events prints one line per turn event, the chunks of a turn joined', async () => {
    const watcher = spawnCtl(d.socketPath, ['events', '--agent', 'watched']);
    const done = finished(watcher);
    const delivered = untilOutput(watcher.stdout!, (t) => t.includes(' done '));
    await untilOutput(watcher.stderr!, (t) => t.includes('watching agent events'));
    await c.send('watched', 'observed by the cli', { sender: 'ev' });
    await delivered;
    watcher.kill('SIGINT');
    const r = await done;
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\d\d:\d\d:\d\d\.\d{3} watched\/ev text "observed by the cli"$/);
    expect(lines[1]).toMatch(/^\d\d:\d\d:\d\d\.\d{3} watched\/ev done 19 chars$/);
  });
});

describe.concurrent('the daemon, usage and exit codes', () => {
  it('ping and stats', async () => {
    const [ping, pingJson, stats, statsJson] = await Promise.all([run('ping'), run('ping', '--json'), run('stats'), run('stats', '--json')]);
    expect(ping.stdout).toMatch(/^pong in \d+(\.\d)? (µs|ms)\n$/);
    expect(pingJson).toMatchObject({ code: 0, stdout: '{}\n' });
    expect(stats.code).toBe(0);
    expect(stats.stdout).toMatch(/^agentd \S+, up \d+[smhd]/);
    expect(stats.stdout).toMatch(/\n {2}workers\s+2\n/);
    expect(stats.stdout).toMatch(/\n {2}active model\s+echo\n/);
    expect(json(statsJson.stdout)).toMatchObject({ workers: 2, active_model: 'echo' });
  });

  it('cluster on a daemon not in cluster mode says so and exits 1', async () => {
    const r = await run('cluster');
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/not in cluster mode \(it was started without --cluster\)/);
  });

  it('usage errors exit 2, an unreachable daemon 3, --help 0 with a description and an example', async () => {
    const [few, unknown, flag, none, noDaemon, help, top] = await Promise.all([
      run('send', 'assistant'),
      run('fly'),
      run('ping', '--guest', 'x'),
      ctl(null, [], {}),
      ctl(null, ['ping', '--socket', join(d.home, 'no.sock')]),
      run('search', '--help'),
      ctl(null, ['--help']),
    ]);
    expect(few).toMatchObject({ code: 2, stdout: '' });
    expect(few.stderr).toContain('agentctl: send takes AGENT TEXT..., got "assistant"');
    expect(unknown).toMatchObject({ code: 2 });
    expect(unknown.stderr).toContain('unknown command "fly"');
    expect(flag.stderr).toContain('ping takes no --guest');
    expect(none.code).toBe(2);
    expect(noDaemon.code).toBe(3);
    expect(noDaemon.stderr).toContain('cannot connect to agentd');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('search stored conversations by words');
    expect(help.stdout).toContain('example:\n  agentctl search');
    expect(top.stdout).toContain('--guest AGENT (stream): another registered agent answers this one turn');
    expect(top.stdout).toMatch(/exit codes:\n {2}0 {3}success/);
  });

  it('agentd refuses an invalid --log-level or AGENTD_LOG_LEVEL with a clear message and exit 2', async () => {
    const home = makeHome();
    const [flag, env] = await Promise.all([runAgentd(['--home', home, '--log-level', 'loud'], {}, 120_000), runAgentd(['--home', home], { AGENTD_LOG_LEVEL: 'LOUD' }, 120_000)]);
    expect(flag).toMatchObject({ code: 2, stderr: 'agentd: --log-level must be one of fatal, error, warn, info, debug, trace, silent, got "loud"\n' });
    expect(env).toMatchObject({ code: 2, stderr: 'agentd: AGENTD_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "LOUD"\n' });
  });
});
