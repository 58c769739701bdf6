import { describe, expect, it } from 'vitest';
import { offeredToolNames } from '../../src/threads/mcp/mcp-names.ts';
import { Redactor } from '../../src/shared/redact.ts';
import { replacingPatch } from '../../src/main/ops/mcp.ts';
import { mergePatch } from '../../src/shared/merge-patch.ts';
import { validateAgentConfig } from '../../src/shared/config-checks.ts';
import { resultText } from '../../src/threads/mcp/mcp-results.ts';

describe('MCP tool names', () => {
  it('are <server>__<tool>, sanitized, at most 64 characters, unique', () => {
    const names = offeredToolNames(new Map([['fs', ['read.file', 'read_file', 'x'.repeat(80)]], ['gh', ['issue/list']]]));
    expect([...names.keys()]).toEqual(['fs__read_file', 'fs__read_file_2', `fs__${'x'.repeat(60)}`, 'gh__issue_list']);
    expect(names.get('fs__read_file_2')).toEqual({ server: 'fs', tool: 'read_file' });
    for (const n of names.keys()) expect(n).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
  });
});

describe('MCP secrets', () => {
  it('env and header values are replaced wherever they occur', () => {
    const redactor = new Redactor(['tok-123456', '1', 'Bearer tok-123456-long']);
    expect(redactor.values('a Bearer tok-123456-long b tok-123456 c 1')).toBe('a [redacted] b [redacted] c 1');
  });
});

describe('upsert_mcp patch', () => {
  it('replaces the entry exactly, nested maps included', () => {
    const from = { command: 'a', args: ['1'], env: { A: '1', B: '2' }, eager: true };
    const to = { command: 'b', env: { B: '3' } };
    expect(mergePatch(from, replacingPatch(from, to))).toEqual(to);
  });
});

describe('MCP config', () => {
  it('needs exactly one of command and url, a valid name, booleans for eager and auto_restart', () => {
    const v = (mcps: unknown) => () => validateAgentConfig({ mcps }, 'test', 'a');
    expect(v({ s: {} })).toThrow(/exactly one of "command"/);
    expect(v({ s: { command: 'x', url: 'http://h' } })).toThrow(/exactly one of "command"/);
    expect(v({ s: { url: 'ftp://h' } })).toThrow(/a\.mcps\.s\.url must be an http/);
    expect(v({ 'bad name': { command: 'x' } })).toThrow(/not a valid MCP server name/);
    expect(v({ s: { command: 'x', eager: 'yes' } })).toThrow(/a\.mcps\.s\.eager must be true or false/);
    expect(v({ s: { command: 'x', eager: true, auto_restart: false } })()).toMatchObject({ mcps: { s: { command: 'x', eager: true, auto_restart: false } } });
  });
});

describe('MCP results', () => {
  it('text as is, other content described, structured content when there is nothing else', () => {
    expect(resultText({ content: [{ type: 'text', text: 'a' }, { type: 'resource_link', uri: 'file:///x', name: 'x' }] })).toBe('a\n[resource link file:///x "x"]');
    expect(resultText({ content: [{ type: 'resource', resource: { uri: 'mem://r', mimeType: 'text/plain', text: 'abc' } }] })).toBe('[resource mem://r (text/plain), 3 characters]');
    expect(resultText({ content: [], structuredContent: { n: 1 } })).toBe('{"n":1}');
  });
});
