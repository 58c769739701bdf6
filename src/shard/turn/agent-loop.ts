/**
 * The agent loop of one turn: call the model, stream what it says, run the
 * tools it asks for, repeat until it answers in text or `max_iterations`.
 * Start and end of the turn belong to the caller; this emits what is between.
 */
import { StopReason, zeroUsage, type ToolCall, type ToolChoice, type Usage } from '../../shared/protocol.ts';
import type { AgentConfig } from '../../shared/config.ts';
import type { Message, Model } from '../../models/types.ts';
import { runTools, type ToolGate, type ToolResult, type ToolSet } from '../tools/tools.ts';
import { GENERIC_REDACTOR, type Redactor } from '../../shared/redact.ts';
import type { Cancellation } from './cancellation.ts';
import { TextAccumulator } from './text-accumulator.ts';
import type { Approver, Steering } from '../runs/run.ts';
import type { LoopState } from './loop-state.ts';
import { CallMeter, callMeter, callStatus } from '../call-meter.ts';
import type { CallStatus } from '../../shared/threads/call-tally.ts';

export type Emit = (event: string, body: Record<string, unknown>) => void;

export interface LoopInput {
  /** The agent answering (the guest, on a guest turn). */
  agent: string;
  sender: string;
  /** Set on guest turns: assistant messages are attributed to it. */
  attributeTo: string | null;
  config: AgentConfig;
  model: Model;
  /** The conversation before this turn (its own array, not a copy: see ModelRequest). */
  history: readonly Message[];
  /** The turn's user message: what the model sees after the history. */
  messages: readonly Message[];
  tools: ToolSet;
  toolChoice: ToolChoice | null;
  cancel: Cancellation;
  emit: Emit;
  /** Where `steer`ed messages wait for the next boundary (before a model call); null: none are taken. */
  steering: Steering | null;
  /** Decides the calls of tools the agent's `approve_tools` names; null: none wait. */
  approver: Approver | null;
  /** A waiting run resumed after a restart: where its loop stood (it goes on from there); absent for a new turn. */
  resume?: LoopState | null;
  /** The turn's seq, naming it in the metrics and traces (call-meter.ts); 0 outside a turn. */
  seq?: number;
}

export interface LoopResult {
  stopReason: StopReason;
  /** Empty on success. */
  error: string;
  usage: Usage;
  /** The text of the last model step that produced any. */
  finalText: string;
  /** Messages this turn completed, in order, to append to the history. */
  produced: Message[];
}

function addUsage(total: Usage, step: Usage): void {
  total.prompt_tokens += step.prompt_tokens;
  total.completion_tokens += step.completion_tokens;
  total.total_tokens += step.total_tokens;
  for (const k of ['cache_hit_tokens', 'cache_miss_tokens', 'reasoning_tokens'] as const) {
    const v = step[k];
    if (v !== undefined) total[k] = (total[k] ?? 0) + v;
  }
}

/** Which segment (text or thinking) is open: emits its `_start` and `_end` events around the deltas. */
class Segments {
  #open: 'text' | 'thinking' | null = null;
  constructor(private readonly agent: string, private readonly emit: Emit) {}

  open(kind: 'text' | 'thinking'): void {
    if (this.#open === kind) return;
    this.close();
    this.emit(`${kind}_start`, { agent: this.agent });
    this.#open = kind;
  }

  close(): void {
    if (this.#open === null) return;
    this.emit(`${this.#open}_end`, { agent: this.agent });
    this.#open = null;
  }
}

/** One model call: streams its text and thinking, collects its tool calls, adds its usage to `usage`. */
async function streamStep(input: LoopInput, produced: readonly Message[], segments: Segments, stepText: TextAccumulator, usage: Usage): Promise<ToolCall[]> {
  const { cancel, emit } = input;
  const calls: ToolCall[] = [];
  let stepUsage: Usage | null = null;
  // Timed here, not by a wrapping async function: an extra await per step measurably cost a turn.
  const start = callMeter.on ? CallMeter.now() : 0;
  try {
    const stream = input.model.stream({
      history: input.history,
      messages: produced.length === 0 ? input.messages : [...input.messages, ...produced],
      tools: [...input.tools.values()].map(({ name, description, parameters }) => ({ name, description, parameters })),
      toolChoice: input.toolChoice,
      agent: input.config,
      cancel,
    });
    for await (const ev of stream) {
      cancel.throwIfAborted();
      switch (ev.type) {
        case 'text':
          segments.open('text');
          stepText.append(ev.delta, ev.whole);
          emit('chunk', { content: ev.delta });
          break;
        case 'thinking':
          segments.open('thinking');
          emit('thinking', { content: ev.delta });
          break;
        case 'tool_call':
          calls.push(ev.call);
          break;
        case 'usage':
          stepUsage = ev.usage;
          addUsage(usage, ev.usage);
          break;
      }
    }
  } catch (err) {
    if (start !== 0) recordStep(input, start, callStatus(err ?? new Error('failed'), cancel.aborted), stepUsage);
    throw err;
  }
  if (start !== 0) recordStep(input, start, 'ok', stepUsage);
  segments.close();
  if (stepUsage !== null) emit('context_usage', { usage: stepUsage });
  return calls;
}

/** One model call, for the metrics and traces (call-meter.ts). */
function recordStep(input: LoopInput, start: number, status: CallStatus, step: Usage | null): void {
  callMeter.model(input.seq ?? 0, input.config.model, input.config.provider ?? 'echo', status, start, CallMeter.now() - start, step?.prompt_tokens ?? 0, step?.completion_tokens ?? 0);
}

/** Holds each call of a tool in `approve_tools` for its approval, announcing it on the stream once the wait is stored; null when no call waits. */
function approvalGate(input: LoopInput): ToolGate | null {
  const { approver, config, cancel, emit } = input;
  const gated = config.approve_tools;
  if (approver === null || gated.length === 0) return null;
  const all = gated.includes('*');
  return (call) => {
    if (!all && !gated.includes(call.name)) return null;
    const announce = (): void => emit('approval_required', { call_id: call.id, tool: call.name, arguments: call.arguments });
    return approver.decide(call, config.approval_timeout_ms, cancel, announce);
  };
}

/** A resumed step's calls without a result: those that waited wait again (as stored), the others were interrupted. */
function resumedGate(input: LoopInput): ToolGate {
  const { approver, config, cancel } = input;
  return (call) => approver?.decide(call, config.approval_timeout_ms, cancel, null) ?? null;
}

type Assistant = (content: string, toolCalls?: ToolCall[]) => Message;

/** Runs the step's calls that have no result yet, then adds the step (the calls with their results) to what the turn produced. */
async function toolStep(input: LoopInput, st: LoopState, gate: ToolGate | null, redactor: Redactor, assistant: Assistant): Promise<void> {
  const { emit } = input;
  const step = st.step!;
  const onResult = (r: ToolResult): void => {
    step.results.push(r);
    emit('tool_result', { call_id: r.call_id, output: r.output, duration_ms: r.duration_ms, is_error: r.is_error });
    input.approver?.resulted();
  };
  const todo = step.calls.filter((c) => !step.results.some((r) => r.call_id === c.id));
  await runTools(input.tools, todo, { agent: input.agent, sender: input.sender, seq: input.seq }, input.cancel, onResult, redactor, gate);
  emit('tools_complete', {});
  // A tool call enters the history only together with its result.
  st.produced.push(assistant(step.text, step.calls));
  for (const call of step.calls) {
    const r = step.results.find((x) => x.call_id === call.id)!;
    st.produced.push({ role: 'tool', content: r.output, tool_call_id: r.call_id, name: r.name, is_error: r.is_error });
  }
  st.step = null;
}

export async function runAgentLoop(input: LoopInput): Promise<LoopResult> {
  const { agent, cancel, emit } = input;
  // The model already yields redacted text; tool output and errors are redacted here.
  const redactor = input.model.redactor ?? GENERIC_REDACTOR;
  const st: LoopState = input.resume ?? { iteration: 0, produced: [], usage: zeroUsage(), finalText: '', step: null };
  input.approver?.follow(st);
  const { produced, usage } = st;
  const segments = new Segments(agent, emit);
  const gate = approvalGate(input);
  // Text of the step in progress: kept on cancel, as streamed text is never taken back.
  const stepText = new TextAccumulator();

  const assistant: Assistant = (content, toolCalls) => {
    const m: Message = { role: 'assistant', content };
    if (input.attributeTo !== null) m.agent = input.attributeTo;
    if (toolCalls !== undefined) m.tool_calls = toolCalls;
    return m;
  };
  /** Steered messages join the turn where the model will see them next; `emit` tells the stream. */
  const steered = (contents: string[] | null | undefined): void => {
    for (const content of contents ?? []) {
      produced.push({ role: 'user', content });
      emit('steered', { content });
    }
  };
  // Messages steered in after the last boundary are stored after what the turn produced: accepted, never dropped.
  const result = (stopReason: StopReason, error = ''): LoopResult => {
    steered(input.steering?.close());
    return { stopReason, error, usage, finalText: st.finalText, produced };
  };

  try {
    if (st.step !== null) {
      await toolStep(input, st, resumedGate(input), redactor, assistant);
      st.iteration++;
    }
    for (; st.iteration < input.config.max_iterations; st.iteration++) {
      cancel.throwIfAborted();
      steered(input.steering?.take());
      stepText.clear();
      const calls = await streamStep(input, produced, segments, stepText, usage);
      if (!stepText.empty) st.finalText = stepText.text();

      if (calls.length === 0) {
        if (!stepText.empty) produced.push(assistant(stepText.text()));
        stepText.clear();
        // A message steered in while the model answered gets an answer too, while steps are left.
        const more = input.steering?.take();
        if (more != null && st.iteration + 1 < input.config.max_iterations) {
          steered(more);
          continue;
        }
        steered(more);
        return result(st.finalText === '' ? StopReason.NoAction : StopReason.Text);
      }

      st.step = { text: stepText.text(), calls, results: [] };
      stepText.clear();
      emit('tool_start', { calls });
      await toolStep(input, st, gate, redactor, assistant);
    }
    return result(StopReason.MaxIterations);
  } catch (err) {
    segments.close();
    // Streamed text is never taken back: a cancelled step keeps what the model said (its calls, without results, do not enter the history).
    const said = st.step?.text ?? (stepText.empty ? '' : stepText.text());
    if (said !== '') produced.push(assistant(said));
    if (cancel.aborted) return result(StopReason.Cancelled, cancel.reason);
    return result(StopReason.Error, redactor.all(err instanceof Error ? err.message : String(err)));
  }
}
