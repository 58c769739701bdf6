import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isValidAgentName } from '../../src/shared/config.ts';
import { ConfigError, validateFileSettings } from '../../src/shared/config-checks.ts';
import { resolveConfig } from '../../src/main/config-load.ts';

describe('config validation', () => {
  const bad: [string, unknown, RegExp][] = [
    ['not an object', [], /top level/],
    ['unknown key', { wrokers: 2 }, /wrokers is not a known option/],
    ['workers zero', { workers: 0 }, /workers must be an integer >= 1/],
    ['workers string', { workers: '2' }, /workers must be/],
    ['tcp malformed', { tcp: 'localhost' }, /tcp must be "HOST:PORT" or "off"/],
    ['agents empty', { agents: {} }, /agents must name at least one agent/],
    ['agent bad name', { agents: { '.hidden': {} } }, /agents\.\.hidden is not a valid agent name/],
    ['agent model type', { agents: { a: { model: 3 } } }, /agents\.a\.model must be a non-empty string/],
    ['agent unknown field', { agents: { a: { modle: 'echo' } } }, /agents\.a\.modle is not a known option/],
    ['echo delay negative', { agents: { a: { echo: { delay_ms: -1 } } } }, /agents\.a\.echo\.delay_ms must be an integer >= 0/],
    ['log level', { log_level: 'loud' }, /log_level must be one of/],
    ['a model without a provider', { agents: { a: { model: 'gpt-4o' } } }, /agents\.a\.provider is required for model "gpt-4o"/],
    ['an unknown provider', { agents: { a: { model: 'm', provider: 'x' } } }, /agents\.a\.provider names no configured provider/],
    ['a provider of another type', { providers: { p: { type: 'anthropic', base_url: 'http://x' } } }, /providers\.p\.type must be "openai"/],
    ['a provider URL', { providers: { p: { type: 'openai', base_url: 'localhost:8080' } } }, /providers\.p\.base_url must be an http/],
    ['an unknown capability', { agents: { a: { harnesses: [{ module: 'm.js', capabilities: ['sessions.delete'] }] } } }, /harnesses\[0\]\.capabilities has unknown capability "sessions\.delete"/],
    ['a harness module given as a path', { agents: { a: { harnesses: [{ module: 'harness/x.mjs' }] } } }, /agents\.a\.harnesses\[0\]\.module must name a module in \$AGENTD_HOME\/harness/],
    ['a harness module given as an absolute path', { agents: { a: { harnesses: [{ module: '/tmp/x.mjs' }] } } }, /harnesses\[0\]\.module must name a module/],
    ['a harness module named ..', { agents: { a: { harnesses: [{ module: '..' }] } } }, /harnesses\[0\]\.module must name a module/],
    ['tool_timeout_ms zero', { agents: { a: { tool_timeout_ms: 0 } } }, /agents\.a\.tool_timeout_ms must be an integer >= 1/],
    ['tool_timeout_ms over an hour', { agents: { a: { tool_timeout_ms: 3_600_001 } } }, /agents\.a\.tool_timeout_ms must be at most 3600000/],
    ['skills not a list', { agents: { a: { skills: 'all' } } }, /agents\.a\.skills must be a list of strings/],
    ['tcp_insecure not a boolean', { tcp_insecure: 'yes' }, /tcp_insecure must be true or false/],
    ['auth_timeout_ms zero', { auth_timeout_ms: 0 }, /auth_timeout_ms must be an integer >= 1/],
    ['max_connections zero', { max_connections: 0 }, /max_connections must be an integer >= 1/],
    ['max_agents zero', { max_agents: 0 }, /max_agents must be an integer >= 1, got 0/],
    ['max_subscriptions a string', { max_subscriptions: '10' }, /max_subscriptions must be an integer >= 1/],
    ['max_observers fractional', { max_observers: 1.5 }, /max_observers must be an integer >= 1/],
    ['max_inflight_per_connection zero', { max_inflight_per_connection: 0 }, /max_inflight_per_connection must be an integer >= 1/],
    ['mcp env not strings', { agents: { a: { mcps: { gh: { env: { TOKEN: 1 } } } } } }, /agents\.a\.mcps\.gh\.env must be a map of strings/],
    ['an unknown session_search scope', { agents: { a: { session_search: 'all' } } }, /agents\.a\.session_search must be "sender" or "agent"/],
  ];
  for (const [name, raw, message] of bad) {
    it(`refuses ${name}`, () => {
      expect(() => validateFileSettings(raw, 'agentd.json')).toThrow(ConfigError);
      expect(() => validateFileSettings(raw, 'agentd.json')).toThrow(message);
    });
  }

  it('accepts a full file', () => {
    const s = validateFileSettings(
      { workers: 3, tcp: 'off', agents: { slow: { model: 'echo', description: 'd', echo: { delay_ms: 5, cpu_us: 10 }, max_iterations: 4 } } },
      'f',
    );
    expect(s.tcp).toBeNull();
    expect(s.agents!.slow).toEqual({
      model: 'echo', provider: null, description: 'd', system_prompt: '', max_iterations: 4, thinking: false,
      skills: [], tools: null, harnesses: [], tool_timeout_ms: 60_000, mcps: {}, echo: { delay_ms: 5, cpu_us: 10 }, session_search: 'sender', compact_threshold: null, approve_tools: [], approval_timeout_ms: 600_000,
    });
    expect(validateFileSettings({ agents: { a: { session_search: 'agent' } } }, 'f').agents!.a!.session_search).toBe('agent');
  });

  it('agent names follow the rule', () => {
    for (const ok of ['a', 'assistant', 'a.b-c_d', 'A1', 'x'.repeat(64)]) expect(isValidAgentName(ok), ok).toBe(true);
    for (const no of ['', '.a', 'a b', 'a/b', 'x'.repeat(65), 'é']) expect(isValidAgentName(no), no).toBe(false);
  });

  it('flags override the file, and the default agent exists without a file', () => {
    const home = mkdtempSync(join(tmpdir(), 'agentd-cfg-'));
    const plain = resolveConfig({ home }, {});
    expect(Object.keys(plain.agents)).toEqual(['assistant']);
    expect(plain.tcp).toEqual({ host: '127.0.0.1', port: 6688 });
    expect(plain.socketPath).toBe(join(home, 'run', 'agentd.sock'));
    writeFileSync(join(home, 'agentd.json'), JSON.stringify({ workers: 3, tcp: '127.0.0.1:7000' }));
    const c = resolveConfig({ home, workers: 5 }, {});
    expect(c.workers).toBe(5);
    expect(c.tcp).toEqual({ host: '127.0.0.1', port: 7000 });
    expect(Object.isFrozen(c.agents)).toBe(true);
    expect(resolveConfig({ home, tcp: 'off' }, {}).tcp).toBeNull();
    expect(plain).toMatchObject({ tcpInsecure: false, authTimeoutMs: 5_000, maxConnections: 4_096 });
    writeFileSync(join(home, 'agentd.json'), JSON.stringify({ tcp_insecure: true, auth_timeout_ms: 250, max_connections: 10 }));
    expect(resolveConfig({ home }, {})).toMatchObject({ tcpInsecure: true, authTimeoutMs: 250, maxConnections: 10 });
    expect(resolveConfig({ home: mkdtempSync(join(tmpdir(), 'agentd-cfg-')), tcpInsecure: true }, {}).tcpInsecure).toBe(true);
  });

  it('limits default to 1,000 agents, 100,000 subscriptions and 64 observers per connection; the file raises them', () => {
    const home = mkdtempSync(join(tmpdir(), 'agentd-cfg-'));
    expect(resolveConfig({ home }, {})).toMatchObject({ maxAgents: 1_000, maxSubscriptions: 100_000, maxObservers: 64 });
    writeFileSync(join(home, 'agentd.json'), JSON.stringify({ max_agents: 5_000, max_subscriptions: 7, max_observers: 1 }));
    expect(resolveConfig({ home }, {})).toMatchObject({ maxAgents: 5_000, maxSubscriptions: 7, maxObservers: 1 });
  });

  it('search_timeout_ms defaults to 5000; the file sets it; zero or a non-integer is refused', () => {
    const home = mkdtempSync(join(tmpdir(), 'agentd-cfg-'));
    expect(resolveConfig({ home }, {}).searchTimeoutMs).toBe(5_000);
    writeFileSync(join(home, 'agentd.json'), JSON.stringify({ search_timeout_ms: 50 }));
    expect(resolveConfig({ home }, {}).searchTimeoutMs).toBe(50);
    expect(() => validateFileSettings({ search_timeout_ms: 0 }, 'agentd.json')).toThrow(/search_timeout_ms/);
    expect(() => validateFileSettings({ search_timeout_ms: '5s' }, 'agentd.json')).toThrow(/search_timeout_ms/);
  });

  it('wal_max_bytes defaults to 64 MiB; the file sets it; a non-positive value is refused', () => {
    const home = mkdtempSync(join(tmpdir(), 'agentd-cfg-'));
    expect(resolveConfig({ home }, {}).walMaxBytes).toBe(64 * 1024 * 1024);
    writeFileSync(join(home, 'agentd.json'), JSON.stringify({ wal_max_bytes: 1_048_576 }));
    expect(resolveConfig({ home }, {}).walMaxBytes).toBe(1_048_576);
    expect(() => validateFileSettings({ wal_max_bytes: 0 }, 'agentd.json')).toThrow(/wal_max_bytes/);
  });

  it('store: sqlite in the home by default; sqlite:PATH; a postgres URL; --store overrides the file; anything else is refused', () => {
    const home = mkdtempSync(join(tmpdir(), 'agentd-cfg-'));
    expect(resolveConfig({ home }, {}).store).toEqual({ kind: 'sqlite', path: join(home, 'agentd.db') });
    expect(resolveConfig({ home, store: 'sqlite:other.db' }, {}).store).toEqual({ kind: 'sqlite', path: join(home, 'other.db') });
    expect(resolveConfig({ home, store: 'sqlite:///tmp/x/a.db' }, {}).store).toEqual({ kind: 'sqlite', path: '/tmp/x/a.db' });
    writeFileSync(join(home, 'agentd.json'), JSON.stringify({ store: 'postgresql://agentd@db.example:5432/agentd' }));
    expect(resolveConfig({ home }, {}).store).toEqual({ kind: 'postgres', url: 'postgresql://agentd@db.example:5432/agentd' });
    expect(resolveConfig({ home, store: 'sqlite' }, {}).store).toEqual({ kind: 'sqlite', path: join(home, 'agentd.db') });
    expect(() => resolveConfig({ home, store: 'mysql://x/y' }, {})).toThrow(/--store: value must be "sqlite", "sqlite:PATH" or a postgres:\/\/ URL, got "mysql:\/\/x\/y"/);
    expect(() => validateFileSettings({ store: 7 }, 'agentd.json')).toThrow(/store must be a non-empty string/);
  });

  it('a bad postgres URL is refused without echoing it (it may hold a password)', () => {
    const home = mkdtempSync(join(tmpdir(), 'agentd-cfg-'));
    let message = '';
    try {
      resolveConfig({ home, store: 'postgres://agentd:s3cret@' }, {});
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      message = (err as Error).message;
    }
    expect(message).toMatch(/--store: value is not a valid URL, got a postgres URL/);
    expect(message).not.toContain('s3cret');
  });
});
