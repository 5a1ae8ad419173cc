import { capturedString, count, isObject, type FormatAdapter, type Usage } from './types.js';

const CONTENT = /"(?:content|arguments|refusal)"\s*:\s*"((?:[^"\\]|\\.)*)"/;
/** A usage object (not `"usage":null`), whatever the provider's JSON spacing. */
const USAGE_OBJECT = /"usage"\s*:\s*\{/;
const INCLUDE_USAGE = Buffer.from('"stream_options":{"include_usage":true},');

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
  outputCapFields: ['max_completion_tokens', 'max_tokens'],
  choicesField: 'n',
  usageOfBody: (body) => (isObject(body) ? usageOf(body.usage) : undefined),
  onEvent(state, event) {
    const data = event.data;
    // Only the final chunk carries a usage object (every other chunk has "usage":null or none),
    // and an error arrives as {"error":…}; the cheap tests keep JSON.parse off the hot path.
    if (data.includes('"usage"') && USAGE_OBJECT.test(data)) {
      const usage = usageOf(parse(data)?.usage);
      if (usage) state.usage = usage;
    } else if (data.includes('"error"') && isObject(parse(data)?.error)) {
      state.failure = 'upstream_stream_error';
    }
  },
  deltaText: (event) => capturedString(event.data, CONTENT),
  /**
   * A streamed chat call reports usage only with `stream_options.include_usage`. When the client
   * did not ask, ask for it: splice the option in after the body's opening brace (the body is
   * otherwise forwarded byte for byte), or, when the client sent `stream_options` without it,
   * re-serialise with the flag set. The usage-only chunk is then removed from what that client
   * receives (UsageChunkFilter).
   */
  streamUsageRequest(facts, raw) {
    if (!facts.stream) return undefined;
    const options = facts.body.stream_options;
    if (isObject(options) && options.include_usage === true) return undefined;
    if (options === undefined) {
      const brace = raw.indexOf(0x7b);
      return Buffer.concat([raw.subarray(0, brace + 1), INCLUDE_USAGE, raw.subarray(brace + 1)]);
    }
    const fixed = { ...facts.body, stream_options: { ...(isObject(options) ? options : {}), include_usage: true } };
    return Buffer.from(JSON.stringify(fixed));
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
