import { mergeRestated } from './usage-read.js';
import { MESSAGES_REFERENCES } from './references.js';
import { capturedString, isObject, MarkerSearch, parseObject, type FormatAdapter } from './types.js';

/**
 * The event names onEvent acts on; `error` as its `event:` line writes it (with or without the
 * one space SSE allows), as the bare word is in many a text delta and the shortest marker sets
 * how far the search can skip.
 */
const MARKERS = new MarkerSearch(['message_start', 'message_delta', 'event:error', 'event: error']);
const DELTA_TEXT = /"(?:text|partial_json|thinking)"\s*:\s*"((?:[^"\\]|\\.)*)"/;

/**
 * Anthropic Messages: `input_tokens` excludes cache reads and writes, which are reported beside
 * it; all three are counted into `input` so every input token is in one figure. The 1-hour
 * part of the cache writes is `cache_creation.ephemeral_1h_input_tokens`; web searches are
 * `server_tool_use.web_search_requests` (web fetches carry no fee); the tier used is
 * `usage.service_tier`, the speed `usage.speed`, the geography `usage.inference_geo`. A call
 * with server-side compaction reports each pass in `usage.iterations` (the top-level counts are
 * the last pass's only); streamed, message_start carries the first pass's input and the last
 * message_delta the whole list.
 */
export const messages: FormatAdapter = {
  endpoint: 'messages',
  outputCapFields: ['max_tokens'],
  usage: {
    counts: [
      { path: 'input_tokens', adds: ['input'], role: 'total' },
      { path: 'cache_read_input_tokens', adds: ['input', 'cachedInput'], role: 'addend' },
      { path: 'cache_creation_input_tokens', adds: ['input', 'cacheWrite'], role: 'addend' },
      { path: 'output_tokens', adds: ['output'], role: 'total' },
      { path: 'cache_creation.ephemeral_1h_input_tokens', adds: ['cacheWrite1h'], role: 'part', of: 'cacheWrite' },
      { path: 'output_tokens_details.thinking_tokens', adds: ['reasoning'], role: 'part', of: 'output', discount: true },
    ],
    toolCounts: [{ path: 'server_tool_use.web_search_requests', tool: 'web_search' }],
    tierPath: 'service_tier',
    speedPath: 'speed',
    geoPath: 'inference_geo',
    partsPath: 'iterations',
  },
  levers: { speedField: 'speed', geoField: 'inference_geo', toolTypes: [['web_search_', 'web_search']], cacheTtl: true, longContextBeta: 'context-1m' },
  references: MESSAGES_REFERENCES,
  onEvent(state, event) {
    switch (event.event) {
      case 'message_start': {
        const start = parseObject(event.data);
        if (start === undefined) {
          state.problem ??= 'usage_malformed';
          break;
        }
        const usage = start.message?.usage;
        if (!isObject(usage) || Array.isArray(usage)) {
          if (usage !== undefined && usage !== null) state.problem ??= 'usage_malformed';
          break;
        }
        // message_start's output_tokens is a placeholder (1 or so): only a message_delta reports
        // the output, so a stream that never sends one has its output estimated.
        const { output_tokens: _placeholder, ...input } = usage;
        state.usage = state.usage === undefined ? input : mergeRestated(input, state.usage);
        break;
      }
      case 'message_delta': {
        // Cumulative counts; fields it does not restate are null or absent (see mergeRestated).
        const delta = parseObject(event.data);
        if (delta === undefined) {
          state.problem ??= 'usage_malformed';
          break;
        }
        if (isObject(delta.usage) && !Array.isArray(delta.usage)) state.usage = mergeRestated(state.usage ?? {}, delta.usage);
        else if (delta.usage !== undefined && delta.usage !== null) state.problem ??= 'usage_malformed';
        break;
      }
      case 'error':
        state.failure = 'upstream_stream_error';
        break;
    }
  },
  usageSignAt: (bytes, from) => MARKERS.firstAt(bytes, from),
  deltaText: (event) => (event.event === 'content_block_delta' ? capturedString(event.data, DELTA_TEXT) : undefined),
};
