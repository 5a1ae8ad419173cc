import { count, isObject, type FormatAdapter, type Usage } from './types.js';

/** OpenAI Chat Completions: `usage.prompt_tokens` (cached inside), `completion_tokens` (reasoning inside). */
function usageOf(u: unknown): Usage | undefined {
  if (!isObject(u)) return undefined;
  return {
    input: count(u.prompt_tokens),
    cachedInput: count(u.prompt_tokens_details?.cached_tokens),
    cacheWrite: 0,
    output: count(u.completion_tokens),
    reasoning: count(u.completion_tokens_details?.reasoning_tokens),
  };
}

export const chat: FormatAdapter = {
  endpoint: 'chat',
  usageOfBody: (body) => (isObject(body) ? usageOf(body.usage) : undefined),
  onEvent(state, event) {
    const data = event.data;
    // Only the final chunk carries a usage object (every other chunk has "usage":null or none),
    // and an error arrives as {"error":…}; the substring tests keep JSON.parse off the hot path.
    if (data.includes('"usage":{')) {
      const usage = usageOf(parse(data)?.usage);
      if (usage) state.usage = usage;
    } else if (data.startsWith('{"error"') || (data.includes('"error"') && isObject(parse(data)?.error))) {
      state.failure = 'upstream_stream_error';
    }
  },
};

function parse(data: string): Record<string, any> | undefined {
  try {
    const v: unknown = JSON.parse(data);
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

export { parse as parseEventData };
