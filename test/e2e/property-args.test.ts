/**
 * Property-based test (fast-check) of every operation's argument validation
 * over a real daemon socket: random argument maps, with fields the operations
 * read and fields they do not, holding values of every type, never produce a
 * 500, never close the connection, never crash the daemon.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import fc from 'fast-check';
import { testDaemon } from '../helpers/daemon.ts';
import { RawConn, type RawFrame } from '../helpers/raw.ts';

/**
 * Every operation of PROTOCOL.md with the fields it reads; the first `required`
 * are always present (holding a well-typed value four times in five), the rest
 * sometimes, so random maps reach the paths behind the first check.
 */
interface OpFields {
  required: string[];
  optional: string[];
  /** Well-typed values of this operation's own, where the shared ones do not fit. */
  good?: Record<string, fc.Arbitrary<unknown>>;
}
const OPERATIONS: Record<string, OpFields> = {
  ping: { required: [], optional: [] },
  auth: { required: [], optional: ['token'] },
  stream: { required: ['agent', 'content'], optional: ['sender', 'guest', 'ephemeral', 'correlation_id', 'on_busy', 'tool_choice', 'turn_id'] },
  send: { required: ['agent', 'content'], optional: ['sender', 'on_busy', 'tool_choice', 'turn_id'] },
  kill: { required: ['agent'], optional: ['sender'] },
  compact: { required: ['agent'], optional: ['sender', 'prompt'] },
  get_conversation_history: { required: ['agent'], optional: ['sender'] },
  delete_conversation: { required: ['agent'], optional: ['sender'] },
  list_conversations: { required: [], optional: ['agent', 'sender'] },
  search_sessions: { required: ['query'], optional: ['limit', 'context_before', 'context_after', 'agent', 'sender'] },
  get_stats: { required: [], optional: [] },
  list_active_conversations: { required: [], optional: ['agent', 'sender'] },
  subscribe_events: { required: [], optional: ['agent'] },
  close: { required: ['request'], optional: [] },
  subscribe_event: { required: ['source', 'target_agent'], optional: ['once'] },
  unsubscribe_event: { required: ['id'], optional: [] },
  list_subscriptions: { required: [], optional: [] },
  publish_event: { required: ['source'], optional: ['payload'] },
  list_agents: { required: [], optional: [] },
  get_agent: { required: ['name'], optional: [] },
  create_agent: { required: ['name', 'config'], optional: [] },
  update_agent: { required: ['name', 'config'], optional: [] },
  // Never the default agent: the turns of later runs need it.
  delete_agent: { required: ['name'], optional: [], good: { name: fc.constantFrom('fuzz', 'nobody', '') } },
  list_models: { required: [], optional: [] },
  set_active_model: { required: ['model'], optional: [] },
  list_skills: { required: [], optional: [] },
  get_skill: { required: ['name'], optional: [] },
};
const OP_NAMES = Object.keys(OPERATIONS);

const leaf = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer({ min: -3, max: 20 }),
  fc.maxSafeInteger(),
  fc.double({ noNaN: true }),
  fc.string({ unit: 'binary', maxLength: 24 }),
  fc.uint8Array({ maxLength: 8 }),
);
/** Any portable value. */
const anyValue: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    leaf,
    fc.array(tie('v'), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 6 }), tie('v'), { maxKeys: 4 }),
  ),
})).v;

const agentName = fc.constantFrom('assistant', 'fuzz', 'nobody');
const smallUint = fc.integer({ min: 0, max: 30 });
/** An agent config or patch: known keys, small echo settings (the runs stay fast), sometimes ill-typed. */
const agentConfig = fc.record(
  {
    model: fc.constantFrom('echo', 'gpt-x'),
    description: fc.string({ maxLength: 10 }),
    max_iterations: fc.integer({ min: 0, max: 4 }),
    thinking: fc.boolean(),
    tools: fc.option(fc.array(fc.constantFrom('search_sessions', 'nope'), { maxLength: 2 })),
    echo: fc.record({ delay_ms: fc.integer({ min: 0, max: 2 }), cpu_us: fc.integer({ min: 0, max: 500 }) }, { requiredKeys: [] }),
    skills: fc.array(fc.string({ maxLength: 4 }), { maxLength: 2 }),
  },
  { requiredKeys: [] },
);

/** A well-typed value for each field operations read. */
const GOOD: Record<string, fc.Arbitrary<unknown>> = {
  agent: agentName,
  target_agent: agentName,
  name: fc.constantFrom('assistant', 'fuzz', 'nobody', '.bad name'),
  sender: fc.constantFrom('user', 'u2', ''),
  content: fc.string({ maxLength: 30 }),
  guest: fc.string({ maxLength: 6 }),
  ephemeral: fc.boolean(),
  correlation_id: smallUint,
  on_busy: fc.constantFrom('enqueue', 'reject', 'interrupt', 'later'),
  tool_choice: fc.oneof(fc.constantFrom('auto', 'none', 'required'), fc.record({ type: fc.constant('function'), name: fc.string({ maxLength: 6 }) })),
  turn_id: fc.string({ maxLength: 70 }),
  prompt: fc.string({ maxLength: 10 }),
  query: fc.constantFrom('hello', 'world', '', '"unbalanced', 'NEAR(', '*'),
  limit: smallUint,
  context_before: smallUint,
  context_after: smallUint,
  request: smallUint,
  source: fc.constantFrom('fuzz:topic', 'other', ''),
  once: fc.boolean(),
  id: smallUint,
  payload: anyValue,
  config: agentConfig,
  model: fc.constantFrom('echo', 'gpt-x', ''),
  token: fc.string({ maxLength: 8 }),
};

const fieldValue = (good: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> =>
  fc.oneof({ arbitrary: good, weight: 4 }, { arbitrary: anyValue, weight: 1 });

/** Fields refused outright (`cwd`, `tools`): stray now and then, so they do not hide the rest. */
const strayKey = fc.oneof({ arbitrary: fc.string({ maxLength: 8 }), weight: 8 }, { arbitrary: fc.constantFrom('cwd', 'tools'), weight: 1 });

/** Random arguments for `op`: its fields, now and then ill-typed, plus now and then a stray field. */
function argsFor(op: string): fc.Arbitrary<Record<string, unknown>> {
  const { required, optional, good = {} } = OPERATIONS[op]!;
  const fields = [...required, ...optional];
  const known = fc.record(Object.fromEntries(fields.map((f) => [f, fieldValue(good[f] ?? GOOD[f]!)])), { requiredKeys: required });
  const stray = fc.dictionary(strayKey, anyValue, { maxKeys: 2 });
  return fc.tuple(known, stray).map(([k, s]) => ({ ...s, ...k }) as Record<string, unknown>);
}
const batch = fc.tuple(...OP_NAMES.map(argsFor));

describe('operation arguments (property)', () => {
  it('random arguments to every operation never produce a 500 or a crash, and ping still answers', async () => {
    const d = await testDaemon({ workers: 1 });
    const c = await RawConn.open(d.socketPath);
    onTestFinished(() => c.close());
    let nextId = 1;
    const seen = new Map<string, RawFrame[]>();

    await fc.assert(
      fc.asyncProperty(batch, async (argLists) => {
        const waits: Promise<RawFrame[]>[] = [];
        OP_NAMES.forEach((op, i) => {
          const id = nextId++;
          c.send(id, { [op]: argLists[i] });
          // An observer sends nothing until an event: a `close` of it is the barrier
          // (its request then ends with `closed`, or it had ended with an error).
          if (op === 'subscribe_events') c.send(nextId++, { close: { request: id } });
          waits.push(c.request(id).then((frames) => (seen.set(op, frames), frames)));
        });
        for (const frames of await Promise.all(waits)) {
          for (const f of frames) expect(f.body.error?.code, JSON.stringify(f.body)).not.toBe(500);
        }
        expect(c.closed).toBe(false);
      }),
      { numRuns: 30 },
    );

    for (const op of OP_NAMES) {
      expect(JSON.stringify(seen.get(op)!.at(-1)!.body), op).not.toMatch(/unknown operation/);
    }
    c.send(nextId, { ping: {} });
    expect((await c.request(nextId))[0]!.body).toEqual({ pong: {} });
    const fresh = await d.client();
    onTestFinished(() => fresh.close());
    await fresh.ping();
    expect(d.proc.exitCode).toBeNull();
  }, 120_000);
});
