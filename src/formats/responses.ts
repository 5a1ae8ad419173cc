import type { RequestFacts } from './model.js';
import { RESPONSES_REFERENCES } from './references.js';
import { capturedString, isObject, MarkerSearch, parseObject, type FormatAdapter } from './types.js';

const DELTA = /"delta"\s*:\s*"((?:[^"\\]|\\.)*)"/;
/** The event names onEvent acts on; `error` as its `event:` line writes it (see messages.ts). */
const MARKERS = new MarkerSearch(['response.completed', 'response.incomplete', 'response.failed', 'event:error', 'event: error']);

/**
 * OpenAI Responses: `usage.input_tokens` (cache reads and writes inside), `output_tokens` (reasoning inside);
 * the service tier used is the response's `service_tier`, and every call of a server-side
 * tool is an item of `output` (`web_search_call`, `file_search_call`).
 */
export const responses: FormatAdapter = {
  endpoint: 'responses',
  outputCapFields: ['max_output_tokens'],
  usage: {
    counts: [
      { path: 'input_tokens', adds: ['input'], role: 'total' },
      { path: 'output_tokens', adds: ['output'], role: 'total' },
      { path: 'input_tokens_details.cached_tokens', adds: ['cachedInput'], role: 'part', of: 'input', discount: true },
      { path: 'input_tokens_details.cache_write_tokens', adds: ['cacheWrite'], role: 'part', of: 'input' },
      { path: 'input_tokens_details.audio_tokens', adds: ['audioInput'], role: 'part', of: 'input' },
      { path: 'input_tokens_details.image_tokens', adds: ['imageInput'], role: 'part', of: 'input' },
      { path: 'output_tokens_details.reasoning_tokens', adds: ['reasoning'], role: 'part', of: 'output', discount: true },
      { path: 'output_tokens_details.audio_tokens', adds: ['audioOutput'], role: 'part', of: 'output' },
      { path: 'output_tokens_details.image_tokens', adds: ['imageOutput'], role: 'part', of: 'output' },
    ],
  },
  tierField: 'service_tier',
  toolItems: { web_search_call: 'web_search', file_search_call: 'file_search' },
  previousResponseField: 'previous_response_id',
  levers: { tierField: 'service_tier', cacheRetentionField: 'prompt_cache_retention', toolTypes: [['web_search', 'web_search'], ['file_search', 'file_search']] },
  references: RESPONSES_REFERENCES,
  onEvent(state, event) {
    // The event name is on the `event:` line; only the terminal events are parsed.
    switch (event.event) {
      case 'response.completed':
      case 'response.incomplete': {
        const response = parseObject(event.data)?.response;
        if (!isObject(response)) {
          state.problem ??= 'usage_malformed';
          break;
        }
        if (isObject(response.usage) && !Array.isArray(response.usage)) state.usage = response.usage;
        else if (response.usage !== undefined && response.usage !== null) state.problem ??= 'usage_malformed';
        if (typeof response.service_tier === 'string') state.serviceTier = response.service_tier;
        state.toolCalls = countToolItems(response.output, responses.toolItems!);
        state.responseId = madeId(response);
        break;
      }
      case 'response.failed':
        state.failure = 'upstream_response_failed';
        // A failed response is stored too (its owner may read it): parsed, as failures are rare.
        state.responseId = madeId(parseObject(event.data)?.response);
        break;
      case 'error':
        state.failure = 'upstream_stream_error';
        break;
    }
  },
  usageSignAt: (bytes, from) => MARKERS.firstAt(bytes, from),
  deltaText: (event) => (event.event !== undefined && event.event.endsWith('.delta') ? capturedString(event.data, DELTA) : undefined),
};

/**
 * What a response id can be (OpenAI's are `resp_` and hex): anything else is never recorded,
 * looked up or put into a provider's URL (no `%`, `.`, `/` or `?` can pass).
 */
const MAX_RESPONSE_ID = 128;
const RESPONSE_ID = new RegExp(`^[A-Za-z0-9_-]{1,${MAX_RESPONSE_ID}}$`);

export function isResponseId(id: string): boolean {
  return RESPONSE_ID.test(id);
}

/** The longest a member's value can be and still decode to a response id: every character a \u escape, and the quotes. */
export const LONGEST_ID_VALUE = 6 * MAX_RESPONSE_ID + 2;

/**
 * The stored responses a call continues (FormatAdapter.previousResponseField): every string
 * value of top-level member `field`, since a body may name it more than once and another
 * parser may keep the first duplicate where JSON.parse keeps the last. A value that cannot be
 * a response id is '' (made by nobody: the call is refused). Null when the body names none. A
 * value that is not a string names no response: it goes to the provider as sent, which refuses it.
 */
export function continuedResponses(facts: RequestFacts, field: string): string[] | null {
  let ids: string[] | null = null;
  for (const span of facts.spans(field)) {
    if (facts.raw.slice(span.valueStart, span.valueStart + 1)[0] !== 0x22 /* " */) continue;
    const id = span.valueEnd - span.valueStart > LONGEST_ID_VALUE ? '' : JSON.parse(facts.raw.text(span.valueStart, span.valueEnd)) as string;
    (ids ??= []).push(isResponseId(id) ? id : '');
  }
  return ids;
}

/** The id of a response object (a terminal event's `response`), when it is one a response can have. */
function madeId(response: unknown): string | null {
  const id = isObject(response) ? response.id : undefined;
  return typeof id === 'string' && isResponseId(id) ? id : null;
}

/** Calls of fee-bearing tools among a response's output items, by fee name. */
function countToolItems(output: unknown, items: Readonly<Record<string, string>>): Record<string, number> {
  const calls: Record<string, number> = {};
  if (!Array.isArray(output)) return calls;
  for (const item of output) {
    const fee = isObject(item) && typeof item.type === 'string' && Object.hasOwn(items, item.type) ? items[item.type] : undefined;
    if (fee !== undefined) calls[fee] = (calls[fee] ?? 0) + 1;
  }
  return calls;
}
