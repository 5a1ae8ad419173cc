import { parseEventData } from './chat.js';
import { capturedString, count, isObject, type FormatAdapter, type StreamState, type Usage } from './types.js';

const DELTA_TEXT = /"(?:text|partial_json|thinking)"\s*:\s*"((?:[^"\\]|\\.)*)"/;

/**
 * Anthropic Messages: `input_tokens` excludes cache reads and writes, which are reported
 * separately; we count them into `input` so every input token is in one figure.
 */
function usageOf(u: unknown): Usage | undefined {
  if (!isObject(u)) return undefined;
  const cacheRead = count(u.cache_read_input_tokens);
  const cacheWrite = count(u.cache_creation_input_tokens);
  return { input: count(u.input_tokens) + cacheRead + cacheWrite, cachedInput: cacheRead, cacheWrite, output: count(u.output_tokens), reasoning: 0 };
}

/**
 * `message_delta.usage` holds cumulative output (and, on newer API versions, input) counts. A
 * field counts as reported only when it is a number: the API sends `null` for counts it does
 * not restate (the SDK's own MessageStream skips those too), and a null must not wipe out the
 * input reported by `message_start`.
 */
function applyDelta(state: StreamState, u: unknown): void {
  if (!isObject(u)) return;
  const base = state.usage ?? { input: 0, cachedInput: 0, cacheWrite: 0, output: 0, reasoning: 0 };
  const input = reported(u.input_tokens);
  const cacheRead = reported(u.cache_read_input_tokens);
  const cacheWrite = reported(u.cache_creation_input_tokens);
  if (input !== undefined || cacheRead !== undefined || cacheWrite !== undefined) {
    const read = cacheRead ?? base.cachedInput;
    const write = cacheWrite ?? base.cacheWrite;
    base.input = (input ?? base.input - base.cachedInput - base.cacheWrite) + read + write;
    base.cachedInput = read;
    base.cacheWrite = write;
  }
  const output = reported(u.output_tokens);
  if (output !== undefined) base.output = output;
  state.usage = base;
}

/** A count the event actually reports (a number), or undefined for an absent or null field. */
function reported(v: unknown): number | undefined {
  return typeof v === 'number' ? count(v) : undefined;
}

export const messages: FormatAdapter = {
  endpoint: 'messages',
  outputCapFields: ['max_tokens'],
  usageOfBody: (body) => (isObject(body) ? usageOf(body.usage) : undefined),
  onEvent(state, event) {
    switch (event.event) {
      case 'message_start': {
        const usage = usageOf(parseEventData(event.data)?.message?.usage);
        if (usage) state.usage = usage;
        break;
      }
      case 'message_delta':
        applyDelta(state, parseEventData(event.data)?.usage);
        break;
      case 'error':
        state.failure = 'upstream_stream_error';
        break;
    }
  },
  deltaText: (event) => (event.event === 'content_block_delta' ? capturedString(event.data, DELTA_TEXT) : undefined),
};
