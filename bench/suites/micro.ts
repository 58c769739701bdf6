/**
 * Micro-benchmarks (tinybench) of the hot functions, each beside the plain
 * alternative it replaced: the inline pair hash against hashing a Buffer,
 * the head-index FIFO against Array#shift on a long backlog, frame decoding,
 * and the bus's source lookup; and a chat-completions request body on a long
 * history, its serialized prefix kept against serializing it whole.
 */
import { Bench } from 'tinybench';
import { encodeBody, encodeFrame, FrameDecoder } from '../../src/shared/codec.ts';
import { fnv1a32, pairHash } from '../../src/shared/hash.ts';
import { Fifo } from '../../src/shard/fifo.ts';
import type { BenchContext } from '../lib/context.ts';
import { median } from '../lib/load.ts';
import { requestBody, WirePrefixes, wireMessage } from '../../src/models/openai-wire.ts';
import type { Message, ModelRequest } from '../../src/models/types.ts';

const LONG_HISTORY = 4_000;
const BODY_TURNS = 50;

/**
 * µs per turn to build the request body of `BODY_TURNS` turns on a history of
 * LONG_HISTORY messages, each turn appending two, and encode it to UTF-8 as
 * fetch does: with the serialized prefix kept (requestBody), or as before it
 * was, the whole request serialized by one JSON.stringify.
 */
function requestBodyCost(keepPrefix: boolean): number {
  const prefixes = new WirePrefixes();
  const message = (i: number): Message => (i % 2 ? { role: 'assistant', content: `reply ${i}: ${'words of an answer '.repeat(4)}` } : { role: 'user', content: `question ${i}: ${'some words '.repeat(6)}` });
  const history = Array.from({ length: LONG_HISTORY }, (_, i) => message(i));
  const agent = { model: 'm', system_prompt: 'be brief' };
  const whole = (now: Message): string =>
    JSON.stringify({ model: agent.model, messages: [{ role: 'system', content: agent.system_prompt }, ...[...history, now].map(wireMessage)], stream: true, stream_options: { include_usage: true } });
  const body = (i: number): number =>
    Buffer.from(keepPrefix ? requestBody({ history, messages: [message(i)], tools: [], toolChoice: null, agent } as unknown as ModelRequest, prefixes) : whole(message(i))).length;
  let sink = body(0);
  const began = performance.now();
  for (let i = 0; i < BODY_TURNS; i++) {
    history.push(message(i), message(i + 1));
    sink += body(i);
  }
  if (sink === 0.5) console.log(sink); // keeps the work observable
  return ((performance.now() - began) * 1000) / BODY_TURNS;
}

export async function run(ctx: BenchContext): Promise<void> {
  const bench = new Bench({ time: ctx.quick ? 200 : 500, warmupTime: 100 });
  const agent = 'assistant';
  const sender = 'user-1234567890';
  let sink = 0;
  bench.add('pairHash (inline utf8)', () => {
    sink ^= pairHash(agent, sender);
  });
  bench.add('fnv1a32 over Buffer.from(agent\\0sender)', () => {
    sink ^= fnv1a32(Buffer.from(`${agent}\u0000${sender}`));
  });
  const BACKLOG = 10_000;
  bench.add(`Fifo push+shift, ${BACKLOG} queued`, () => {
    const q = new Fifo<number>();
    for (let i = 0; i < BACKLOG; i++) q.push(i);
    while (q.size > 0) sink ^= q.shift()!;
  });
  bench.add(`Array push+shift, ${BACKLOG} queued`, () => {
    const q: number[] = [];
    for (let i = 0; i < BACKLOG; i++) q.push(i);
    while (q.length > 0) sink ^= q.shift()!;
  });
  const frames = Buffer.concat(Array.from({ length: 64 }, (_, i) => encodeFrame(i, 0, encodeBody({ stream: { agent: 'assistant', content: 'hello there', sender: `s${i}` } }))));
  const decoder = new FrameDecoder({ onFrame: (id) => (sink ^= id), onOversize: () => {} });
  bench.add('FrameDecoder, 64 frames in one chunk', () => decoder.push(frames));
  const index = new Map<string, number[]>();
  for (let i = 0; i < 100_000; i++) index.set(`source.${i}`, [i]);
  bench.add('bus lookup by source, 100k sources', () => {
    sink ^= index.get(`source.${(sink & 0xffff) % 100_000}`)?.[0] ?? 0;
  });
  await bench.run();
  const ns = (name: string): number => {
    const t = bench.tasks.find((x) => x.name === name)!;
    const r = t.result as unknown as { latency?: { p50?: number; mean?: number }; mean?: number };
    return (r.latency?.mean ?? r.mean ?? NaN) * 1e6;
  };
  const add = (name: string, anchor: string | null): void =>
    ctx.report.add({ suite: 'micro', name, unit: 'ns/op', value: ns(name), anchor: anchor ?? '', anchor_value: anchor === null ? null : ns(anchor), spread: 0 });
  add('pairHash (inline utf8)', 'fnv1a32 over Buffer.from(agent\\0sender)');
  add(`Fifo push+shift, ${BACKLOG} queued`, `Array push+shift, ${BACKLOG} queued`);
  add('FrameDecoder, 64 frames in one chunk', null);
  add('bus lookup by source, 100k sources', null);
  const kept: number[] = [];
  const whole: number[] = [];
  for (let round = 0; round < 3; round++) {
    kept.push(requestBodyCost(true));
    whole.push(requestBodyCost(false));
  }
  ctx.report.add({
    suite: 'micro',
    name: `chat-completions body of a turn on a ${LONG_HISTORY}-message history, serialized prefix kept`,
    unit: 'us',
    value: median(kept),
    anchor: 'whole request serialized at once',
    anchor_value: median(whole),
    spread: 0,
  });
  if (sink === 0.5) console.log(sink); // keeps the work observable
}
