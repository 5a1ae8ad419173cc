import { parseEventData } from './chat.js';
import { capturedString, count, isObject, type FormatAdapter, type Usage } from './types.js';

const DELTA = /"delta"\s*:\s*"((?:[^"\\]|\\.)*)"/;

/** OpenAI Responses: `usage.input_tokens` (cached inside), `output_tokens` (reasoning inside). */
function usageOf(u: unknown): Usage | undefined {
  if (!isObject(u)) return undefined;
  return {
    input: count(u.input_tokens),
    cachedInput: count(u.input_tokens_details?.cached_tokens),
    cacheWrite: 0,
    output: count(u.output_tokens),
    reasoning: count(u.output_tokens_details?.reasoning_tokens),
  };
}

export const responses: FormatAdapter = {
  endpoint: 'responses',
  outputCapFields: ['max_output_tokens'],
  usageOfBody: (body) => (isObject(body) ? usageOf(body.usage) : undefined),
  onEvent(state, event) {
    // The event name is on the `event:` line; only the terminal events are parsed.
    switch (event.event) {
      case 'response.completed':
      case 'response.incomplete': {
        const usage = usageOf(parseEventData(event.data)?.response?.usage);
        if (usage) state.usage = usage;
        break;
      }
      case 'response.failed':
        state.failure = 'upstream_response_failed';
        break;
      case 'error':
        state.failure = 'upstream_stream_error';
        break;
    }
  },
  deltaText: (event) => (event.event !== undefined && event.event.endsWith('.delta') ? capturedString(event.data, DELTA) : undefined),
};
