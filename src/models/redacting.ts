/**
 * A model as one agent sees it: the provider's output with the agent's
 * configured secrets removed before anything else reads it (stream, history,
 * compaction summary, errors). Text and thinking are matched across chunk
 * boundaries; a held-back tail is released before any other kind of event,
 * so the order of events is kept.
 */
import type { Redactor, StreamRedactor } from '../shared/redact.ts';
import type { Model, ModelEvent, ModelRequest } from './types.ts';

export class RedactingModel implements Model {
  readonly #inner: Model;
  readonly redactor: Redactor;

  constructor(inner: Model, redactor: Redactor) {
    this.#inner = inner;
    this.redactor = redactor;
  }

  get name(): string {
    return this.#inner.name;
  }

  async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    const r = this.redactor;
    const text = r.stream();
    const thinking = r.stream();
    const release = (s: StreamRedactor, type: 'text' | 'thinking'): ModelEvent[] => {
      const delta = s.flush();
      return delta === '' ? [] : [{ type, delta }];
    };
    try {
      for await (const ev of this.#inner.stream(request)) {
        if (ev.type === 'text' || ev.type === 'thinking') {
          const [mine, other] = ev.type === 'text' ? [text, thinking] : [thinking, text];
          yield* release(other, ev.type === 'text' ? 'thinking' : 'text');
          const delta = mine.push(ev.delta);
          if (delta !== '') yield { type: ev.type, delta };
          continue;
        }
        yield* release(thinking, 'thinking');
        yield* release(text, 'text');
        yield ev.type === 'tool_call' ? { type: 'tool_call', call: { ...ev.call, arguments: r.values(ev.call.arguments) } } : ev;
      }
    } catch (err) {
      // What was held is a possible start of a secret: dropped with the failed stream.
      throw r.error(err);
    }
    yield* release(thinking, 'thinking');
    yield* release(text, 'text');
  }
}
