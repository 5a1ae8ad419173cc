import { parseEventData } from './chat.js';
import { capturedString, count, isObject, type FormatAdapter, type StreamState, type Usage } from './types.js';

const DELTA_TEXT = /"(?:text|partial_json|thinking)":"((?:[^"\\]|\\.)*)"/;

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

/** `message_delta.usage` holds cumulative output (and, on newer API versions, input) counts. */
function applyDelta(state: StreamState, u: unknown): void {
  if (!isObject(u)) return;
  const base = state.usage ?? { input: 0, cachedInput: 0, cacheWrite: 0, output: 0, reasoning: 0 };
  if ('input_tokens' in u || 'cache_read_input_tokens' in u || 'cache_creation_input_tokens' in u) {
    const cacheRead = 'cache_read_input_tokens' in u ? count(u.cache_read_input_tokens) : base.cachedInput;
    const cacheWrite = 'cache_creation_input_tokens' in u ? count(u.cache_creation_input_tokens) : base.cacheWrite;
    const fresh = 'input_tokens' in u ? count(u.input_tokens) : base.input - base.cachedInput - base.cacheWrite;
    base.input = fresh + cacheRead + cacheWrite;
    base.cachedInput = cacheRead;
    base.cacheWrite = cacheWrite;
  }
  if ('output_tokens' in u) base.output = count(u.output_tokens);
  state.usage = base;
}

export const messages: FormatAdapter = {
  endpoint: 'messages',
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
