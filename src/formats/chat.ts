import { capturedString, isObject, parseObject, type FormatAdapter } from './types.js';
import { CHAT_REFERENCES } from './references.js';

const CONTENT = /"(?:content|arguments|refusal)"\s*:\s*"((?:[^"\\]|\\.)*)"/;
/** A usage member other than `"usage":null`, whatever the provider's JSON spacing. */
const USAGE_MEMBER = /"usage"\s*:\s*[^\sn]/;
const INCLUDE_USAGE = Buffer.from('"stream_options":{"include_usage":true},');

/**
 * OpenAI Chat Completions: `usage.prompt_tokens` (cache reads, cache writes and audio inside), `completion_tokens`
 * (reasoning and audio inside). `total_tokens` is not read: alone it cannot say what was input.
 */
export const chat: FormatAdapter = {
  endpoint: 'chat',
  outputCapFields: ['max_completion_tokens', 'max_tokens'],
  choicesField: 'n',
  usage: {
    counts: [
      { path: 'prompt_tokens', adds: ['input'], role: 'total' },
      { path: 'completion_tokens', adds: ['output'], role: 'total' },
      { path: 'prompt_tokens_details.cached_tokens', adds: ['cachedInput'], role: 'part', of: 'input', discount: true },
      { path: 'prompt_tokens_details.cache_write_tokens', adds: ['cacheWrite'], role: 'part', of: 'input' },
      { path: 'prompt_tokens_details.audio_tokens', adds: ['audioInput'], role: 'part', of: 'input' },
      { path: 'prompt_tokens_details.image_tokens', adds: ['imageInput'], role: 'part', of: 'input' },
      { path: 'completion_tokens_details.reasoning_tokens', adds: ['reasoning'], role: 'part', of: 'output', discount: true },
      { path: 'completion_tokens_details.audio_tokens', adds: ['audioOutput'], role: 'part', of: 'output' },
      { path: 'completion_tokens_details.image_tokens', adds: ['imageOutput'], role: 'part', of: 'output' },
    ],
  },
  tierField: 'service_tier',
  levers: { tierField: 'service_tier', cacheRetentionField: 'prompt_cache_retention', toolOptions: [['web_search_options', 'web_search']] },
  references: CHAT_REFERENCES,
  onEvent(state, event) {
    const data = event.data;
    // Only the final chunk carries a usage object (every other chunk has "usage":null or none),
    // and an error arrives as {"error":…}; the cheap tests keep JSON.parse off the hot path.
    if (data.includes('"usage"') && USAGE_MEMBER.test(data)) {
      const chunk = parseObject(data);
      if (chunk === undefined) {
        state.problem ??= 'usage_malformed';
        return;
      }
      if (isObject(chunk.usage) && !Array.isArray(chunk.usage)) state.usage = chunk.usage;
      else if (chunk.usage !== undefined && chunk.usage !== null) state.problem ??= 'usage_malformed';
      if (typeof chunk.service_tier === 'string') state.serviceTier = chunk.service_tier;
    } else if (data.includes('"error"') && isObject(parseObject(data)?.error)) {
      state.failure = 'upstream_stream_error';
    }
  },
  usageSignAt: signAt,
  deltaText: (event) => capturedString(event.data, CONTENT),
  /**
   * A streamed chat call reports usage only with `stream_options.include_usage`. When the client
   * did not ask, ask for it: splice the option in after the body's opening brace, or, when the
   * client sent `stream_options` without it, replace that member's value with the client's
   * options plus the flag (every `stream_options` member, should the key be repeated). Every
   * other byte of the body is forwarded as the client sent it. What the provider then adds to
   * the stream is taken out again on the way to that client (UsageChunkFilter).
   */
  streamUsageRequest(facts) {
    if (!facts.stream) return undefined;
    const spans = facts.spans('stream_options');
    if (spans.length === 0) {
      const brace = facts.raw.indexOf(0x7b) + 1;
      return facts.raw.splice(brace, brace, INCLUDE_USAGE);
    }
    const options = facts.member('stream_options');
    if (isObject(options) && options.include_usage === true) return undefined;
    const fixed = Buffer.from(JSON.stringify({ ...(isObject(options) ? options : {}), include_usage: true }));
    let body = facts.raw;
    // From the last to the first, so that the offsets of the earlier ones stay true.
    for (const span of spans.reverse()) body = body.splice(span.valueStart, span.valueEnd, fixed);
    return body;
  },
};

/**
 * Where, at or after `from`, the bytes hold `"error"` or a `"usage"` member whose value is not
 * `null` (-1: nowhere). With include_usage every chunk carries `"usage":null` and only the last a
 * usage object, so this keeps the tap from parsing every event. Anything other than spaces, a
 * colon and `n` after the key counts.
 *
 * One pass in JavaScript rather than a native search per key (a read that brings a whole stream
 * holds a `"usage"` in every event, and each native search costs more to call than this loop
 * costs per byte), skipping as Horspool's search does: the byte under the keys' closing quote
 * says how far the next possible match is (SKIP). The other formats' MarkerSearch does the same for
 * any markers; this loop, for two keys of one length tested unrolled, took 90–125 ns per Chat
 * event where MarkerSearch took 115–285 (bench/README.md, History, "2026-11-29, second").
 */
function signAt(bytes: Buffer, from: number): number {
  const last = bytes.length - 7;
  for (let at = from; at <= last; at += SKIP[bytes[at + 6]!]!) {
    if (bytes[at + 6] !== 0x22 /* " */ || bytes[at] !== 0x22) continue;
    const c = bytes[at + 1];
    if (c === 0x75 /* u */) {
      if (bytes[at + 2] === 0x73 && bytes[at + 3] === 0x61 && bytes[at + 4] === 0x67 && bytes[at + 5] === 0x65 && usageValueFollows(bytes, at + 7)) return at;
    } else if (c === 0x65 /* e */) {
      if (bytes[at + 2] === 0x72 && bytes[at + 3] === 0x72 && bytes[at + 4] === 0x6f && bytes[at + 5] === 0x72) return at;
    }
  }
  return -1;
}

/**
 * For each byte found where a key's closing quote would be: how far on the next `"usage"` or
 * `"error"` can start (7 for a byte in neither key; for one in them, its distance from the end of
 * the key, the closer of the two).
 */
const SKIP = (() => {
  const skip = new Uint8Array(256).fill(7);
  for (const key of ['"usage"', '"error"']) {
    for (let i = 0; i < key.length - 1; i++) skip[key.charCodeAt(i)] = Math.min(skip[key.charCodeAt(i)]!, key.length - 1 - i);
  }
  return skip;
})();

/** After a `"usage"` key ending just before `i`: whether what follows may be a usage object. */
function usageValueFollows(bytes: Buffer, i: number): boolean {
  while (bytes[i] === 0x20 || bytes[i] === 0x09) i++;
  // A key inside a string value ends with `\"`, so `,`, `}` or `]` follows; anything else here is
  // unusual: look closer.
  if (bytes[i] !== 0x3a /* : */) return !(bytes[i] === 0x2c || bytes[i] === 0x7d || bytes[i] === 0x5d);
  i++;
  while (bytes[i] === 0x20 || bytes[i] === 0x09) i++;
  return bytes[i] !== 0x6e /* n */;
}
