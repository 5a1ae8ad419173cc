/**
 * Deterministic mock LLM provider.
 *
 * Speaks three wire formats over plain node:http:
 *   POST /v1/chat/completions  (OpenAI Chat Completions)
 *   POST /v1/responses         (OpenAI Responses)
 *   POST /v1/messages          (Anthropic Messages)
 *   GET  /v1/models            (OpenAI- or Anthropic-shaped list)
 *   GET|DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items
 *                              (the responses it made, as OpenAI stores them; a
 *                              `previous_response_id` it never made is refused as OpenAI does)
 *
 * Behaviour is steered per request by an optional top-level body field
 * `"mock"` (see MockSwitches below). Built for tests, the offline demo and
 * benchmarks: no logging, plain bodies are rendered from cached templates,
 * and large streams are generated lazily while respecting backpressure.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { isSea } from 'node:sea';
import { pathToFileURL } from 'node:url';

export interface MockProviderOptions {
  host?: string;
  /** default 0 (ephemeral port) */
  port?: number;
  /** keep a log of received requests; default true */
  record?: boolean;
  /**
   * The ids GET /v1/models lists, per list format (`tollgate serve --mock`: the catalogue's
   * entries). Default: a fixed account with models the gateway does not serve and fine-tunes of
   * other organisations, and an Anthropic list longer than its default page.
   */
  models?: { openai: readonly string[]; anthropic: readonly string[] };
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** raw body text */
  body: string;
}

export interface MockProvider {
  /** e.g. "http://127.0.0.1:PORT" (no trailing slash, no /v1) */
  url: string;
  port: number;
  /** every request received, in order (when record is true) */
  requests: RecordedRequest[];
  /**
   * Holds every inference call received from now on before it is answered, until `release()`:
   * lets a test keep calls in flight for exactly as long as it needs, with no timing guess.
   */
  pause(): void;
  /**
   * Without a tag: answers the calls held by `pause()` (and stops holding), resolving to how many
   * were held. With a tag: lets every answer held under `tag` (switch `hold`) go on; answers
   * tagged `tag` that arrive later are not held.
   */
  release(tag?: string): number;
  /** Calls held by `pause()` right now. */
  readonly held: number;
  /**
   * Resolves once `count` answers tagged `tag` (switch `hold`) have reached their hold point,
   * whether or not they were released since: a test waits on this instead of sleeping.
   */
  waitHeld(tag: string, count?: number): Promise<void>;
  /**
   * From now on, every request presenting this credential (`Authorization: Bearer …` or
   * `x-api-key`) is refused with `status` (default 401, as the provider refuses a revoked key:
   * see `refusedCredentialBody`; 403, as it refuses a key without access to what it asks for),
   * until `acceptCredential(credential)`.
   */
  refuseCredential(credential: string, status?: 401 | 403): void;
  acceptCredential(credential: string): void;
  /**
   * From now on, every request (whatever its credential and switches) is refused with `status`
   * and its format's error body — for 429 with `insufficientQuota`, OpenAI's answer to an
   * organisation out of credit — plus `headers` (e.g. `retry-after`), until `answerAll()`: a
   * provider account rate limited, overloaded or unpaid as a whole.
   */
  refuseAll(status: number, options?: RefuseAllOptions): void;
  answerAll(): void;
  /**
   * Stops listening (new connections are refused, the open ones closed) until
   * `acceptConnections()`, which listens again on the same port: an origin that cannot be
   * reached, then comes back.
   */
  refuseConnections(): Promise<void>;
  acceptConnections(): Promise<void>;
  /** closes the server and destroys open sockets */
  close(): Promise<void>;
}

export interface RefuseAllOptions {
  /** Headers added to the refusal (`retry-after`, `retry-after-ms`, …). */
  headers?: Record<string, string>;
  /** 429 only: OpenAI's body for an organisation out of credit (`insufficient_quota`). */
  insufficientQuota?: boolean;
  /** Only the inference calls of this model are refused (providers limit per model). */
  model?: string;
}

/** Shape of the optional top-level `"mock"` field in a request body (all optional). */
export interface MockSwitches {
  /** default 11 */
  inputTokens?: number;
  /** default 7 */
  outputTokens?: number;
  /** default 0: chat prompt_tokens_details.cached_tokens, responses input_tokens_details.cached_tokens, messages cache_read_input_tokens */
  cachedTokens?: number;
  /** answer with this x-request-id instead of a fresh one (a provider that repeats its ids) */
  requestId?: string;
  /** default 0: messages cache_creation_input_tokens only */
  cacheWriteTokens?: number;
  /** default 0: chat completion_tokens_details / responses output_tokens_details reasoning_tokens */
  reasoningTokens?: number;
  /** 400..599: answer this status with a format-appropriate error body instead */
  status?: number;
  /** wait this long before sending response headers */
  delayMs?: number;
  /** content delta events in a stream / pieces of the plain text (default 5): "tok0 ", "tok1 ", ... */
  chunks?: number;
  /** wait between stream events (default 0: everything in one write); each event is its own write */
  chunkDelayMs?: number;
  /**
   * stream, with chunkDelayMs 0: every event its own write, sent to the socket at once (as a
   * provider that flushes per token does), back to back: a burst of separate writes
   */
  separateWrites?: boolean;
  /**
   * stream, with chunkDelayMs 0: every event its own write (its own chunk of the chunked
   * encoding), all in the same tick, so node:http sends them together: events that arrive in
   * one read on the other side
   */
  writePerEvent?: boolean;
  /** stream: after this many content deltas, close the connection without finishing the body */
  cutAfter?: number;
  /** stream: after the deltas send the format's error event instead of the normal end */
  errorEvent?: boolean;
  /**
   * Text of about this many bytes, generated lazily with backpressure. Deltas are 8 KiB
   * (or ceil(bytes/chunks) capped at 64 KiB when chunks is given). Also works for plain
   * bodies. In Responses streams the aggregate `text` of the *.done / completed events is
   * "" so that no single event is huge.
   */
  bytes?: number;
  /** chat stream: omit the usage chunk even if stream_options.include_usage was asked */
  noUsage?: boolean;
  /**
   * The service tier the answer reports: chat and responses `service_tier` (plain body, every
   * chat chunk, the response object), messages `usage.service_tier`. Without it, chat and
   * responses report the request's own `service_tier` ("auto" answered as "default") when it
   * sent one, and nothing otherwise.
   */
  serviceTier?: string;
  /** chat: prompt_tokens_details / completion_tokens_details audio_tokens (default 0) */
  audioInputTokens?: number;
  audioOutputTokens?: number;
  /** chat and responses: image_tokens in the input / output details (absent by default) */
  imageInputTokens?: number;
  imageOutputTokens?: number;
  /** messages: of cacheWriteTokens, this many to the 1-hour cache (adds usage.cache_creation) */
  cacheWrite1hTokens?: number;
  /** web searches: messages usage.server_tool_use.web_search_requests; responses web_search_call output items */
  webSearchRequests?: number;
  /**
   * Raw JSON text put where the usage value goes, instead of the real usage: the plain body's
   * `usage`, the chat usage chunk's, response.completed's, messages message_delta's. For
   * answers whose usage the gateway cannot read (`{}`, `{"total_tokens":5}`, …).
   */
  usageJson?: string;
  /** messages stream: raw JSON text for message_start's usage */
  startUsageJson?: string;
  /** plain body: leave the `usage` member out altogether */
  omitUsage?: boolean;
  /** stream: the event that carries the usage is sent with its JSON cut short (unparseable) */
  malformedUsageEvent?: boolean;
  /**
   * Hold the answer under this tag until the test calls `release(tag)` (or the connection
   * closes): a stream after its opening events and `holdAfter` content deltas, a plain answer
   * or an error status before anything is sent. Tests use it to stop an answer at a known point
   * instead of racing a delay.
   */
  hold?: string;
  /** stream: content deltas sent before the hold (default 0) */
  holdAfter?: number;
}

// ---------------------------------------------------------------------------
// Switches

interface Sw {
  I: number;
  O: number;
  C: number;
  W: number;
  R: number;
  status: number;
  delayMs: number;
  chunks: number;
  chunksGiven: boolean;
  chunkDelayMs: number;
  separateWrites: boolean;
  writePerEvent: boolean;
  cutAfter: number; // -1 = none
  errorEvent: boolean;
  bytes: number; // -1 = off
  noUsage: boolean;
  tier: string | null;
  AI: number;
  AO: number;
  II: number; // -1 = absent
  IO: number; // -1 = absent
  W1h: number; // -1 = absent
  searches: number; // -1 = absent
  usageJson: string | null;
  startUsageJson: string | null;
  omitUsage: boolean;
  malformed: boolean;
  /** '' for the default shapes; else a key that makes plain-body templates distinct */
  extraKey: string;
  hold: string | null;
  holdAfter: number;
  /** What a Responses answer repeats of the request (NO_ECHO: nothing was sent to repeat). */
  echo: RespEcho;
}

/**
 * The members of a request that OpenAI's Responses object repeats, as JSON text, in the plain
 * answer and in the `response` of every stream event (and GET /v1/responses/{id}).
 */
interface RespEcho {
  instructions: string;
  promptCacheKey: string;
  text: string;
  tools: string;
  user: string;
  metadata: string;
}

const NO_ECHO: RespEcho = Object.freeze({ instructions: 'null', promptCacheKey: 'null', text: '{"format":{"type":"text"}}', tools: '[]', user: 'null', metadata: '{}' });
const ECHOED = ['instructions', 'prompt_cache_key', 'text', 'tools', 'user', 'metadata'] as const;

/** What a Responses answer repeats of this request body: NO_ECHO when it sets none of those members. */
function responseEcho(body: Record<string, unknown>): RespEcho {
  if (!ECHOED.some((name) => body[name] !== undefined)) return NO_ECHO;
  const json = (name: (typeof ECHOED)[number], absent: string): string => (body[name] === undefined ? absent : JSON.stringify(body[name]));
  return {
    instructions: json('instructions', NO_ECHO.instructions),
    promptCacheKey: json('prompt_cache_key', NO_ECHO.promptCacheKey),
    text: json('text', NO_ECHO.text),
    tools: json('tools', NO_ECHO.tools),
    user: json('user', NO_ECHO.user),
    metadata: json('metadata', NO_ECHO.metadata),
  };
}

const DEFAULT_SW: Sw = Object.freeze({
  I: 11,
  O: 7,
  C: 0,
  W: 0,
  R: 0,
  status: 0,
  delayMs: 0,
  chunks: 5,
  chunksGiven: false,
  chunkDelayMs: 0,
  separateWrites: false,
  writePerEvent: false,
  cutAfter: -1,
  errorEvent: false,
  bytes: -1,
  noUsage: false,
  tier: null,
  AI: 0,
  AO: 0,
  II: -1,
  IO: -1,
  W1h: -1,
  searches: -1,
  usageJson: null,
  startUsageJson: null,
  omitUsage: false,
  malformed: false,
  extraKey: '',
  hold: null,
  holdAfter: 0,
  echo: NO_ECHO,
});

function nonNeg(v: unknown, d: number): number {
  return typeof v === 'number' && v >= 0 && Number.isFinite(v) ? Math.floor(v) : d;
}

function readSwitches(m: unknown): Sw {
  if (m === null || typeof m !== 'object' || Array.isArray(m)) return DEFAULT_SW;
  const o = m as Record<string, unknown>;
  const status = nonNeg(o.status, 0);
  return {
    I: nonNeg(o.inputTokens, 11),
    O: nonNeg(o.outputTokens, 7),
    C: nonNeg(o.cachedTokens, 0),
    W: nonNeg(o.cacheWriteTokens, 0),
    R: nonNeg(o.reasoningTokens, 0),
    status: status >= 400 && status <= 599 ? status : 0,
    delayMs: nonNeg(o.delayMs, 0),
    chunks: nonNeg(o.chunks, 5),
    chunksGiven: typeof o.chunks === 'number',
    chunkDelayMs: nonNeg(o.chunkDelayMs, 0),
    separateWrites: o.separateWrites === true,
    writePerEvent: o.writePerEvent === true,
    cutAfter: nonNeg(o.cutAfter, -1),
    errorEvent: o.errorEvent === true,
    bytes: nonNeg(o.bytes, -1),
    noUsage: o.noUsage === true,
    tier: typeof o.serviceTier === 'string' ? o.serviceTier : null,
    AI: nonNeg(o.audioInputTokens, 0),
    AO: nonNeg(o.audioOutputTokens, 0),
    II: nonNeg(o.imageInputTokens, -1),
    IO: nonNeg(o.imageOutputTokens, -1),
    W1h: nonNeg(o.cacheWrite1hTokens, -1),
    searches: nonNeg(o.webSearchRequests, -1),
    usageJson: typeof o.usageJson === 'string' ? o.usageJson : null,
    startUsageJson: typeof o.startUsageJson === 'string' ? o.startUsageJson : null,
    omitUsage: o.omitUsage === true,
    malformed: o.malformedUsageEvent === true,
    extraKey: JSON.stringify([o.serviceTier, o.audioInputTokens, o.audioOutputTokens, o.imageInputTokens, o.imageOutputTokens, o.cacheWrite1hTokens, o.webSearchRequests, o.usageJson, o.omitUsage]),
    hold: typeof o.hold === 'string' && o.hold.length > 0 ? o.hold : null,
    holdAfter: nonNeg(o.holdAfter, 0),
    echo: NO_ECHO,
  };
}

// ---------------------------------------------------------------------------
// Deterministic text

const PIECE_CACHE: string[] = [];
function piece(i: number): string {
  if (i < 256) return (PIECE_CACHE[i] ??= 'tok' + i + ' ');
  return 'tok' + i + ' ';
}

const TEXT_CACHE = new Map<number, string>();
function fullText(chunks: number): string {
  let s = TEXT_CACHE.get(chunks);
  if (s === undefined) {
    s = '';
    for (let i = 0; i < chunks; i++) s += piece(i);
    if (TEXT_CACHE.size < 64) TEXT_CACHE.set(chunks, s);
  }
  return s;
}

/** JSON-safe ASCII filler used for `bytes` mode, built once (64 KiB). */
const FILLER_MAX = 65536;
let fillerStr: string | undefined;
function filler(): string {
  if (fillerStr === undefined) {
    const pat = 'abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789.\n';
    const jsonPat = pat.replace('\n', ' '); // keep it JSON-safe, no escapes
    let s = '';
    while (s.length < FILLER_MAX) s += jsonPat;
    fillerStr = s.slice(0, FILLER_MAX);
  }
  return fillerStr;
}

/** Plan of text deltas for one response. */
interface Plan {
  count: number;
  /** text of delta i */
  at(i: number): string;
  /** full text, or '' in bytes mode (never materialised) */
  full: string;
}

function makePlan(sw: Sw): Plan {
  if (sw.bytes < 0) {
    return { count: sw.chunks, at: piece, full: fullText(sw.chunks) };
  }
  const total = sw.bytes;
  const size = sw.chunksGiven && sw.chunks > 0 ? Math.min(FILLER_MAX, Math.max(1, Math.ceil(total / sw.chunks))) : 8192;
  const count = Math.ceil(total / size);
  const fill = filler();
  const whole = fill.slice(0, size);
  const lastLen = total - (count - 1) * size;
  const last = fill.slice(0, lastLen);
  return { count, at: (i) => (i === count - 1 ? last : whole), full: '' };
}

// ---------------------------------------------------------------------------
// Body builders (string concatenation; n/created/model are pre-rendered strings
// so the same builders can produce templates with sentinel holes).

const S_N = '\u0000N\u0000';
const S_T = '\u0000T\u0000';
const S_M = '\u0000M\u0000';
const S_X = '\u0000X\u0000';

function chatUsage(sw: Sw): string {
  if (sw.usageJson !== null) return sw.usageJson;
  return (
    '{"prompt_tokens":' + sw.I +
    ',"completion_tokens":' + sw.O +
    ',"total_tokens":' + (sw.I + sw.O) +
    ',"prompt_tokens_details":{"cached_tokens":' + sw.C +
    ',"audio_tokens":' + sw.AI + (sw.II >= 0 ? ',"image_tokens":' + sw.II : '') +
    '},"completion_tokens_details":{"reasoning_tokens":' + sw.R +
    ',"audio_tokens":' + sw.AO + (sw.IO >= 0 ? ',"image_tokens":' + sw.IO : '') +
    ',"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}'
  );
}

function respUsage(sw: Sw): string {
  if (sw.usageJson !== null) return sw.usageJson;
  return (
    '{"input_tokens":' + sw.I +
    ',"input_tokens_details":{"cached_tokens":' + sw.C + (sw.II >= 0 ? ',"image_tokens":' + sw.II : '') +
    '},"output_tokens":' + sw.O +
    ',"output_tokens_details":{"reasoning_tokens":' + sw.R + (sw.IO >= 0 ? ',"image_tokens":' + sw.IO : '') +
    '},"total_tokens":' + (sw.I + sw.O) + '}'
  );
}

/** Messages usage; `outputTokens` is 1 in message_start (a placeholder, as the real API sends). */
function msgUsage(sw: Sw, outputTokens: number): string {
  return (
    '{"input_tokens":' + sw.I +
    ',"cache_creation_input_tokens":' + sw.W +
    ',"cache_read_input_tokens":' + sw.C +
    (sw.W1h >= 0 ? ',"cache_creation":{"ephemeral_5m_input_tokens":' + Math.max(0, sw.W - sw.W1h) + ',"ephemeral_1h_input_tokens":' + sw.W1h + '}' : '') +
    ',"output_tokens":' + outputTokens +
    (sw.searches >= 0 ? ',"server_tool_use":{"web_search_requests":' + sw.searches + '}' : '') +
    (sw.tier !== null ? ',"service_tier":' + JSON.stringify(sw.tier) : '') + '}'
  );
}

/** `,"service_tier":"…"` for chat and responses answers, or '' (see MockSwitches.serviceTier). */
function tierMember(sw: Sw): string {
  return sw.tier === null ? '' : ',"service_tier":' + JSON.stringify(sw.tier);
}

/** The usage member of a plain body (`,"usage":…`), or '' with omitUsage. */
function usageMember(sw: Sw, usage: string): string {
  return sw.omitUsage ? '' : ',"usage":' + usage;
}

/** An event's JSON cut short, for malformedUsageEvent. */
function broken(json: string): string {
  return json.slice(0, Math.max(1, json.length - 2));
}

function chatPlainBody(n: string, created: string, model: string, text: string, sw: Sw): string {
  return (
    '{"id":"chatcmpl-mock' + n +
    '","object":"chat.completion","created":' + created +
    ',"model":' + model +
    ',"choices":[{"index":0,"message":{"role":"assistant","content":"' + text +
    '","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}]' + usageMember(sw, chatUsage(sw)) +
    tierMember(sw) + ',"system_fingerprint":"fp_mock"}'
  );
}

function respItem(n: string, status: string, text: string): string {
  return (
    '{"type":"message","id":"msg_mock' + n + '","status":"' + status +
    '","role":"assistant","content":[{"type":"output_text","text":"' + text + '","annotations":[],"logprobs":[]}]}'
  );
}

/** The web_search_call output items of a response that searched (webSearchRequests), each followed by a comma. */
function searchItems(n: string, sw: Sw): string {
  let items = '';
  for (let i = 0; i < sw.searches; i++) items += '{"type":"web_search_call","id":"ws_mock' + n + '_' + i + '","status":"completed","action":{"type":"search","query":"mock"}},';
  return items;
}

/**
 * OpenAI's Responses object, its members in OpenAI's order: what the request set and the object
 * repeats (`instructions`, `prompt_cache_key`, `text`, `tools`, `user`, `metadata`: sw.echo)
 * stands where OpenAI puts it, `user` and `metadata` after `usage`.
 */
function respObject(n: string, created: string, model: string, status: string, output: string, usage: string | null, error: string, sw: Sw = DEFAULT_SW): string {
  const echo = sw.echo;
  return (
    '{"id":"resp_mock' + n +
    '","object":"response","created_at":' + created +
    ',"status":"' + status +
    '","background":false,"error":' + error +
    ',"incomplete_details":null,"instructions":' + echo.instructions + ',"max_output_tokens":null,"model":' + model +
    ',"output":' + output +
    ',"parallel_tool_calls":true,"previous_response_id":null,"prompt_cache_key":' + echo.promptCacheKey +
    ',"reasoning":{"effort":null,"summary":null},"safety_identifier":null' + tierMember(sw) +
    ',"store":true,"temperature":1,"text":' + echo.text + ',"tool_choice":"auto","tools":' + echo.tools + ',"top_p":1,"truncation":"disabled"' + (usage === null ? '' : ',"usage":' + usage) +
    ',"user":' + echo.user + ',"metadata":' + echo.metadata + '}'
  );
}

function respPlainBody(n: string, created: string, model: string, text: string, sw: Sw): string {
  return respObject(n, created, model, 'completed', '[' + searchItems(n, sw) + respItem(n, 'completed', text) + ']', sw.omitUsage ? null : respUsage(sw), 'null', sw);
}

function msgPlainBody(n: string, _created: string, model: string, text: string, sw: Sw): string {
  return (
    '{"id":"msg_mock' + n +
    '","type":"message","role":"assistant","model":' + model +
    ',"content":[{"type":"text","text":"' + text +
    '"}],"stop_reason":"end_turn","stop_sequence":null' + usageMember(sw, sw.usageJson ?? msgUsage(sw, sw.O)) + '}'
  );
}

const CHAT = 0;
const RESP = 1;
const MSG = 2;
type Fmt = typeof CHAT | typeof RESP | typeof MSG;

const PLAIN_BUILDERS = [chatPlainBody, respPlainBody, msgPlainBody] as const;
const DEFAULT_MODEL_JSON = ['"gpt-4o-mini"', '"gpt-4o-mini"', '"claude-sonnet-4-5"'] as const;

// ---------------------------------------------------------------------------
// Plain-body templates: static parts + holes (N = counter, T = created, M = model)

const HOLE_N = 0;
const HOLE_T = 1;
const HOLE_M = 2;

interface Template {
  parts: string[];
  holes: number[];
  staticBytes: number;
}

function makeTemplate(fmt: Fmt, sw: Sw): Template {
  const body = PLAIN_BUILDERS[fmt](S_N, S_T, S_M, fullText(sw.chunks), sw);
  const parts: string[] = [];
  const holes: number[] = [];
  let last = 0;
  for (;;) {
    const i = body.indexOf('\u0000', last);
    if (i === -1) break;
    parts.push(body.slice(last, i));
    const tag = body[i + 1];
    holes.push(tag === 'N' ? HOLE_N : tag === 'T' ? HOLE_T : HOLE_M);
    last = i + 3;
  }
  parts.push(body.slice(last));
  let staticBytes = 0;
  for (const p of parts) staticBytes += Buffer.byteLength(p);
  return { parts, holes, staticBytes };
}

const DEFAULT_TEMPLATES: Template[] = [makeTemplate(CHAT, DEFAULT_SW), makeTemplate(RESP, DEFAULT_SW), makeTemplate(MSG, DEFAULT_SW)];
const TEMPLATE_CACHE = new Map<string, Template>();

function templateFor(fmt: Fmt, sw: Sw): Template {
  if (sw === DEFAULT_SW) return DEFAULT_TEMPLATES[fmt]!;
  const key = fmt + ':' + sw.I + ':' + sw.O + ':' + sw.C + ':' + sw.W + ':' + sw.R + ':' + sw.chunks + ':' + sw.extraKey;
  let t = TEMPLATE_CACHE.get(key);
  if (t === undefined) {
    t = makeTemplate(fmt, sw);
    if (TEMPLATE_CACHE.size >= 1024) TEMPLATE_CACHE.clear();
    TEMPLATE_CACHE.set(key, t);
  }
  return t;
}

// ---------------------------------------------------------------------------
// Headers

const CT_JSON = 'application/json';
const CT_SSE = 'text/event-stream; charset=utf-8';

const LEAKY_COMMON = ['server', 'mock-provider', 'set-cookie', '__cf_bm=mock; Path=/', 'cf-ray', 'mock'];
const LEAKY_OPENAI = [
  'openai-processing-ms', '1',
  'openai-version', '2020-10-01',
  'openai-organization', 'mock-org',
  'x-ratelimit-limit-requests', '1000',
  'x-ratelimit-remaining-requests', '999',
  'x-ratelimit-limit-tokens', '1000000',
  'x-ratelimit-remaining-tokens', '999000',
];
const LEAKY_ANTHROPIC = [
  'anthropic-organization-id', 'mock-org',
  'anthropic-ratelimit-requests-limit', '1000',
  'anthropic-ratelimit-requests-remaining', '999',
];

const H_JSON = [
  ['content-type', CT_JSON, ...LEAKY_COMMON, ...LEAKY_OPENAI],
  ['content-type', CT_JSON, ...LEAKY_COMMON, ...LEAKY_ANTHROPIC],
] as const;
const H_SSE = [
  ['content-type', CT_SSE, 'cache-control', 'no-cache', 'connection', 'keep-alive', ...LEAKY_COMMON, ...LEAKY_OPENAI],
  ['content-type', CT_SSE, 'cache-control', 'no-cache', 'connection', 'keep-alive', ...LEAKY_COMMON, ...LEAKY_ANTHROPIC],
] as const;

/** 0 = OpenAI-flavoured headers, 1 = Anthropic-flavoured */
type Flavor = 0 | 1;

function jsonHeaders(flavor: Flavor, rid: string, len: number): string[] {
  const h: string[] = H_JSON[flavor].slice();
  h.push('content-length', '' + len, 'x-request-id', rid);
  if (flavor === 1) h.push('request-id', rid);
  return h;
}

function sseHeaders(flavor: Flavor, rid: string): string[] {
  const h: string[] = H_SSE[flavor].slice();
  h.push('x-request-id', rid);
  if (flavor === 1) h.push('request-id', rid);
  return h;
}

function statusMessage(status: number): string {
  return http.STATUS_CODES[status] ?? (status === 529 ? 'Overloaded' : 'Unknown');
}

function sendJson(res: ServerResponse, status: number, flavor: Flavor, rid: string, body: string, bytes = Buffer.byteLength(body)): void {
  res.writeHead(status, statusMessage(status), jsonHeaders(flavor, rid, bytes));
  res.end(body);
}

// ---------------------------------------------------------------------------
// Error bodies

function openaiError(message: string, type: string, code: string | null): string {
  return JSON.stringify({ error: { message, type, param: null, code } });
}

function anthropicError(type: string, message: string): string {
  return JSON.stringify({ type: 'error', error: { type, message } });
}

const ERROR_CACHE = new Map<number, string>();
function statusErrorBody(flavor: Flavor, status: number): string {
  const key = status * 2 + flavor;
  let b = ERROR_CACHE.get(key);
  if (b === undefined) {
    if (flavor === 1) {
      const type =
        status === 400 ? 'invalid_request_error'
        : status === 401 ? 'authentication_error'
        : status === 402 ? 'billing_error'
        : status === 403 ? 'permission_error'
        : status === 404 ? 'not_found_error'
        : status === 413 ? 'request_too_large'
        : status === 429 ? 'rate_limit_error'
        : status === 504 ? 'timeout_error'
        : status === 529 ? 'overloaded_error'
        : status >= 500 ? 'api_error'
        : 'invalid_request_error';
      b = anthropicError(type, status === 529 ? 'Overloaded' : 'mock error');
    } else {
      if (status === 429) b = openaiError('mock error', 'requests', 'rate_limit_exceeded');
      else if (status === 401) b = openaiError('mock error', 'invalid_request_error', 'invalid_api_key');
      else if (status >= 500) b = openaiError('mock error', 'server_error', null);
      else b = openaiError('mock error', 'invalid_request_error', null);
    }
    ERROR_CACHE.set(key, b);
  }
  return b;
}

/** OpenAI's 429 for an organisation out of credit (its type and code both `insufficient_quota`). */
const INSUFFICIENT_QUOTA = openaiError('You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.', 'insufficient_quota', 'insufficient_quota');

/** OpenAI's answer to a `previous_response_id` it does not have (400). */
function previousNotFound(id: string): string {
  return JSON.stringify({ error: { message: `Previous response with id '${id}' not found.`, type: 'invalid_request_error', param: 'previous_response_id', code: 'previous_response_not_found' } });
}

/** OpenAI's answer to GET or DELETE of a response it does not have (404). */
function responseNotFound(id: string): string {
  return openaiError(`Response with id '${id}' not found.`, 'invalid_request_error', null);
}

const BAD_JSON_OPENAI = openaiError(
  "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)",
  'invalid_request_error',
  null,
);
const BAD_JSON_ANTHROPIC = anthropicError('invalid_request_error', 'There was an error parsing the body of your request as JSON.');
const MAX_TOKENS_MISSING = anthropicError('invalid_request_error', 'max_tokens: Field required');

const CHAT_STREAM_ERROR = 'data: ' + openaiError('mock error', 'server_error', null) + '\n\n';
const MSG_STREAM_ERROR = 'event: error\ndata: ' + anthropicError('overloaded_error', 'Overloaded') + '\n\n';

// ---------------------------------------------------------------------------
// Models

/**
 * OpenAI's list holds what the account can see: the catalogue's models, models the gateway does
 * not serve, and fine-tunes, owned by the organisation that made them (the gateway's operator's,
 * and on a shared account other customers').
 */
const OPENAI_MODELS = JSON.stringify({
  object: 'list',
  data: [
    { id: 'gpt-4o-mini', object: 'model', created: 1721172741, owned_by: 'system' },
    { id: 'gpt-4o', object: 'model', created: 1715367049, owned_by: 'system' },
    { id: 'gpt-4.1', object: 'model', created: 1744316542, owned_by: 'system' },
    { id: 'ft:gpt-4o-mini:org-xyz::abc', object: 'model', created: 1730000000, owned_by: 'org-xyz' },
    { id: 'ft:gpt-4o-mini-2024-07-18:acme-corp::k3Yq9v', object: 'model', created: 1731000000, owned_by: 'user-acme0123' },
    { id: 'text-embedding-3-small', object: 'model', created: 1705948997, owned_by: 'system' },
    { id: 'claude-sonnet-4-5', object: 'model', created: 1759104000, owned_by: 'system' },
    { id: 'claude-haiku-4-5', object: 'model', created: 1760486400, owned_by: 'system' },
  ],
});

/**
 * Anthropic's list, longer than its default page (20): `claude-haiku-4-5` comes after 22 models
 * the gateway does not serve, on the second page of a client that does not ask for more.
 */
const ANTHROPIC_MODEL_LIST: ReadonlyArray<Record<string, string>> = [
  { type: 'model', id: 'claude-sonnet-4-5', display_name: 'Claude Sonnet 4.5', created_at: '2025-09-29T00:00:00Z' },
  ...Array.from({ length: 22 }, (_, i) => ({
    type: 'model', id: `claude-legacy-${String(22 - i).padStart(2, '0')}-20240101`, display_name: `Claude Legacy ${22 - i}`, created_at: `2024-01-${String(23 - i).padStart(2, '0')}T00:00:00Z`,
  })),
  { type: 'model', id: 'claude-haiku-4-5', display_name: 'Claude Haiku 4.5', created_at: '2025-10-15T00:00:00Z' },
];

/**
 * One page of Anthropic's list as GET /v1/models answers it: `limit` (default 20, 1 to 1000),
 * `after_id` / `before_id` cursors; null for a `limit` Anthropic refuses.
 */
function anthropicModelPage(query: string, list: ReadonlyArray<Record<string, string>>): string | null {
  const params = new URLSearchParams(query);
  const limitText = params.get('limit');
  const limit = limitText === null ? 20 : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) return null;
  const after = params.get('after_id');
  const before = params.get('before_id');
  const at = (id: string): number => list.findIndex((m) => m.id === id);
  let from = after === null ? 0 : at(after) + 1;
  let to = before === null ? list.length : Math.max(0, at(before));
  if (before !== null && after === null) from = Math.max(0, to - limit);
  else to = Math.min(to, from + limit);
  const data = list.slice(from, to);
  const hasMore = before !== null && after === null ? from > 0 : to < list.length;
  return JSON.stringify({ data, has_more: hasMore, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null });
}

/**
 * A provider's 401 for a credential it refuses, as each sends it: OpenAI names the key it got,
 * masked to its first 7 and last 4 characters; Anthropic does not.
 */
function refusedCredentialBody(flavor: Flavor, credential: string): string {
  if (flavor === 1) return anthropicError('authentication_error', 'invalid x-api-key');
  return openaiError(
    `Incorrect API key provided: ${credential.slice(0, 7)}****${credential.slice(-4)}. You can find your API key at https://platform.openai.com/account/api-keys.`,
    'invalid_request_error',
    'invalid_api_key',
  );
}

/** The credential a request presents, and how: x-api-key is Anthropic's way. */
function presentedCredential(h: http.IncomingHttpHeaders): { credential: string; flavor: Flavor } {
  const bearer = typeof h.authorization === 'string' && h.authorization.startsWith('Bearer ') ? h.authorization.slice(7) : undefined;
  if (bearer !== undefined) return { credential: bearer, flavor: h['anthropic-version'] !== undefined ? 1 : 0 };
  return { credential: typeof h['x-api-key'] === 'string' ? h['x-api-key'] : '', flavor: 1 };
}

// ---------------------------------------------------------------------------
// Streams: generators of SSE text, with a CUT marker for abrupt termination and a HOLD marker
// where the answer waits for the test

const CUT = Symbol('cut');
const HOLD = Symbol('hold');
type Item = string | typeof CUT | typeof HOLD;

interface StreamCtx {
  n: string;
  created: string;
  model: string;
  sw: Sw;
  plan: Plan;
  includeUsage: boolean;
}

/** index after which the socket is cut (min(cutAfter, count)), or -1 */
function cutIndex(sw: Sw, count: number): number {
  return sw.cutAfter < 0 ? -1 : Math.min(sw.cutAfter, count);
}

/** index of the delta before which the stream is held (count: before its end), or -1 */
function holdIndex(sw: Sw, count: number): number {
  return sw.hold === null ? -1 : Math.min(sw.holdAfter, count);
}

function* chatStream(c: StreamCtx): Generator<Item> {
  const { sw, plan } = c;
  const base =
    'data: {"id":"chatcmpl-mock' + c.n +
    '","object":"chat.completion.chunk","created":' + c.created +
    ',"model":' + c.model + tierMember(sw) +
    ',"system_fingerprint":"fp_mock","choices":[';
  const head = base + '{"index":0,"delta":';
  const tail = c.includeUsage ? ',"usage":null}\n\n' : '}\n\n';
  yield head + '{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]' + tail;
  const count = plan.count;
  const cut = cutIndex(sw, count);
  const hold = holdIndex(sw, count);
  for (let i = 0; i < count; i++) {
    if (i === hold) yield HOLD;
    if (i === cut) {
      yield CUT;
      return;
    }
    yield head + '{"content":"' + plan.at(i) + '"},"logprobs":null,"finish_reason":null}]' + tail;
  }
  if (hold === count) yield HOLD;
  if (cut === count) {
    yield CUT;
    return;
  }
  if (sw.errorEvent) {
    yield CHAT_STREAM_ERROR;
    return;
  }
  yield head + '{},"logprobs":null,"finish_reason":"stop"}]' + tail;
  if (c.includeUsage && !sw.noUsage) {
    const chunk = base + '],"usage":' + chatUsage(sw) + '}';
    yield (sw.malformed ? broken(chunk) : chunk) + '\n\n';
  }
  yield 'data: [DONE]\n\n';
}

function* respStream(c: StreamCtx): Generator<Item> {
  const { sw, plan, n } = c;
  let seq = 0;
  const ev = (type: string, rest: string): string =>
    'event: ' + type + '\ndata: {"type":"' + type + '","sequence_number":' + seq++ + ',' + rest + '}\n\n';
  const itemId = 'msg_mock' + n;
  const loc = '"item_id":"' + itemId + '","output_index":0,"content_index":0';
  yield ev('response.created', '"response":' + respObject(n, c.created, c.model, 'in_progress', '[]', 'null', 'null', sw));
  yield ev('response.in_progress', '"response":' + respObject(n, c.created, c.model, 'in_progress', '[]', 'null', 'null', sw));
  yield ev(
    'response.output_item.added',
    '"output_index":0,"item":{"id":"' + itemId + '","type":"message","status":"in_progress","content":[],"role":"assistant"}',
  );
  yield ev('response.content_part.added', loc + ',"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}');
  const count = plan.count;
  const cut = cutIndex(sw, count);
  const hold = holdIndex(sw, count);
  for (let i = 0; i < count; i++) {
    if (i === hold) yield HOLD;
    if (i === cut) {
      yield CUT;
      return;
    }
    yield ev('response.output_text.delta', loc + ',"delta":"' + plan.at(i) + '","logprobs":[]');
  }
  if (hold === count) yield HOLD;
  if (cut === count) {
    yield CUT;
    return;
  }
  const usage = respUsage(sw);
  if (sw.errorEvent) {
    const item = respItem(n, 'incomplete', plan.full);
    yield ev(
      'response.failed',
      '"response":' +
        respObject(n, c.created, c.model, 'failed', '[' + item + ']', usage, '{"code":"server_error","message":"mock error"}', sw),
    );
    return;
  }
  const text = plan.full;
  yield ev('response.output_text.done', loc + ',"text":"' + text + '","logprobs":[]');
  yield ev('response.content_part.done', loc + ',"part":{"type":"output_text","annotations":[],"logprobs":[],"text":"' + text + '"}');
  const item = respItem(n, 'completed', text);
  yield ev('response.output_item.done', '"output_index":0,"item":' + item);
  const completed = ev('response.completed', '"response":' + respObject(n, c.created, c.model, 'completed', '[' + searchItems(n, sw) + item + ']', usage, 'null', sw));
  yield sw.malformed ? broken(completed.slice(0, -2)) + '\n\n' : completed;
}

function* msgStream(c: StreamCtx): Generator<Item> {
  const { sw, plan } = c;
  yield (
    'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_mock' + c.n +
    '","type":"message","role":"assistant","model":' + c.model +
    ',"content":[],"stop_reason":null,"stop_sequence":null,"usage":' + (sw.startUsageJson ?? msgUsage(sw, 1)) + '}}\n\n' +
    'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n' +
    'event: ping\ndata: {"type": "ping"}\n\n'
  );
  const count = plan.count;
  const cut = cutIndex(sw, count);
  const hold = holdIndex(sw, count);
  for (let i = 0; i < count; i++) {
    if (i === hold) yield HOLD;
    if (i === cut) {
      yield CUT;
      return;
    }
    yield 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"' + plan.at(i) + '"}}\n\n';
  }
  if (hold === count) yield HOLD;
  if (cut === count) {
    yield CUT;
    return;
  }
  if (sw.errorEvent) {
    yield MSG_STREAM_ERROR;
    return;
  }
  const deltaUsage = sw.usageJson ?? '{"output_tokens":' + sw.O + (sw.searches >= 0 ? ',"server_tool_use":{"web_search_requests":' + sw.searches + '}' : '') + '}';
  const delta = '{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":' + deltaUsage + '}';
  yield (
    'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n' +
    'event: message_delta\ndata: ' + (sw.malformed ? broken(delta) : delta) + '\n\n' +
    'event: message_stop\ndata: {"type":"message_stop"}\n\n'
  );
}

const STREAMS = [chatStream, respStream, msgStream] as const;

/** Plain (non-stream) body in bytes mode: prefix, lazily generated text, suffix. */
function* plainBytes(before: string, plan: Plan, after: string): Generator<Item> {
  yield before;
  for (let i = 0; i < plan.count; i++) yield plan.at(i);
  yield after;
}

// ---------------------------------------------------------------------------
// Writing helpers

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => {
    setTimeout(resolve, ms).unref();
  });
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** Terminate the connection without finishing the HTTP message (no final chunk). */
function cutConnection(res: ServerResponse): void {
  const s = res.socket;
  if (!s || s.destroyed) {
    res.destroy();
    return;
  }
  // end() flushes what was already written (incl. corked data), then FIN;
  // the chunked body is never terminated, so the client sees a premature close.
  s.once('finish', () => s.destroy());
  s.end();
}

const BATCH = 65536;
function noop(): void {}

/** Waits until the test releases a held answer (or its connection closes). */
type HoldWait = (res: ServerResponse) => Promise<void>;

/** How a stream without delays is written: all events in one write, each its own write sent together, or each its own send. */
type Writes = 'batch' | 'chunks' | 'sends';

async function pump(res: ServerResponse, it: Iterator<Item>, delayMs: number, holdWait: HoldWait, writes: Writes = 'batch'): Promise<void> {
  res.on('error', noop);
  let batch = '';
  let first = true;
  for (let r = it.next(); r.done !== true; r = it.next()) {
    if (res.destroyed) return;
    const v = r.value;
    if (v === CUT) {
      if (batch !== '') res.write(batch);
      cutConnection(res);
      return;
    }
    if (v === HOLD) {
      if (batch !== '') res.write(batch);
      batch = '';
      await holdWait(res);
      if (res.destroyed) return;
      continue;
    }
    if (delayMs > 0) {
      if (!first) {
        await sleep(delayMs);
        if (res.destroyed) return;
      }
      first = false;
      if (!res.write(v)) await drained(res);
    } else if (writes !== 'batch') {
      // node:http corks the socket until the next tick; uncorked, each write is its own send.
      const ok = res.write(v);
      if (writes === 'sends') res.socket?.uncork();
      if (!ok) await drained(res);
    } else {
      batch = batch === '' ? v : batch + v;
      if (batch.length >= BATCH) {
        const ok = res.write(batch);
        batch = '';
        if (!ok) await drained(res);
      }
    }
  }
  if (res.destroyed) return;
  if (batch !== '') res.end(batch);
  else res.end();
}

// ---------------------------------------------------------------------------
// Stored responses (Responses API)

/** A response the mock made: enough to answer GET /v1/responses/{id} and its input items. */
interface StoredResponse {
  n: string;
  created: string;
  model: string;
  sw: Sw;
  input: unknown;
}

/** Responses remembered at most (the oldest is forgotten first): the mock also serves benchmarks. */
const MAX_STORED_RESPONSES = 100_000;

/** The input items of a stored response, as OpenAI lists them (a string input is one user message). */
function inputItems(r: StoredResponse): Record<string, unknown>[] {
  const text = (t: string): unknown[] => [{ type: 'input_text', text: t }];
  if (typeof r.input === 'string') return [{ id: 'msg_mock' + r.n + '_in0', type: 'message', role: 'user', status: 'completed', content: text(r.input) }];
  if (!Array.isArray(r.input)) return [];
  return r.input.map((item: unknown, i) => {
    const o = item !== null && typeof item === 'object' ? (item as Record<string, unknown>) : {};
    const content = typeof o.content === 'string' ? text(o.content) : o.content;
    return { id: 'msg_mock' + r.n + '_in' + i, type: 'message', status: 'completed', ...o, ...(content === undefined ? {} : { content }) };
  });
}

/** GET /v1/responses/{id}/input_items: OpenAI's list (newest first unless `order=asc`), all on one page. */
function inputItemList(r: StoredResponse, query: string): string {
  const items = inputItems(r);
  if (!/[?&]order=asc(&|$)/.test(query)) items.reverse();
  return JSON.stringify({ object: 'list', data: items, first_id: items[0]?.id ?? null, last_id: items.at(-1)?.id ?? null, has_more: false });
}

// ---------------------------------------------------------------------------
// Server

function nowSec(): number {
  return Math.floor(Date.now() / 1000);
}

export async function startMockProvider(opts: MockProviderOptions = {}): Promise<MockProvider> {
  const host = opts.host ?? '127.0.0.1';
  const record = opts.record !== false;
  const openaiModels = opts.models === undefined ? OPENAI_MODELS
    : JSON.stringify({ object: 'list', data: opts.models.openai.map((id) => ({ id, object: 'model', created: 1764547200, owned_by: 'system' })) });
  const anthropicModels = opts.models === undefined ? ANTHROPIC_MODEL_LIST
    : opts.models.anthropic.map((id) => ({ type: 'model', id, display_name: id, created_at: '2025-12-01T00:00:00Z' }));
  const requests: RecordedRequest[] = [];
  let paused = false;
  let waiting: Array<() => void> = [];
  let counter = 0;
  /** Credentials refused, with the status they are refused with (`refuseCredential`). */
  const refused = new Map<string, 401 | 403>();
  /** Every request refused so (`refuseAll`), or null. */
  let refuseAll: { status: number; headers: string[]; insufficientQuota: boolean; model: string | undefined } | null = null;
  const refusedByAll = (text: string): boolean => {
    if (refuseAll === null) return false;
    if (refuseAll.model === undefined) return true;
    try {
      return (JSON.parse(text) as { model?: unknown }).model === refuseAll.model;
    } catch {
      return false;
    }
  };

  // Held answers, by tag: how many reached their hold, who waits for that, and who is held.
  interface HoldTag { reached: number; waiters: Array<{ count: number; resolve: () => void }>; held: Set<() => void> }
  const holds = new Map<string, HoldTag>();
  const released = new Set<string>();
  const holdTag = (tag: string): HoldTag => {
    let h = holds.get(tag);
    if (h === undefined) holds.set(tag, (h = { reached: 0, waiters: [], held: new Set() }));
    return h;
  };
  const holdWaitFor = (tag: string): HoldWait => (res) => {
    const h = holdTag(tag);
    h.reached++;
    h.waiters = h.waiters.filter((w) => (w.count <= h.reached ? (w.resolve(), false) : true));
    if (released.has(tag)) return Promise.resolve();
    return new Promise((resolve) => {
      const go = (): void => {
        h.held.delete(go);
        res.off('close', go);
        resolve();
      };
      h.held.add(go);
      res.once('close', go);
    });
  };
  const noHold: HoldWait = () => Promise.resolve();
  /** The responses made, by id (`resp_mock` + the request's number). */
  const stored = new Map<string, StoredResponse>();
  const remember = (n: number, model: string, sw: Sw, input: unknown): void => {
    if (stored.size >= MAX_STORED_RESPONSES) stored.delete(stored.keys().next().value!);
    stored.set('resp_mock' + n, { n: '' + n, created: '' + nowSec(), model, sw, input });
  };
  /** GET|DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items; false for any other path there. */
  const storedResponse = (res: ServerResponse, method: string, rest: string, query: string, rid: string): boolean => {
    const slash = rest.indexOf('/');
    const id = slash === -1 ? rest : rest.slice(0, slash);
    const sub = slash === -1 ? '' : rest.slice(slash);
    if (id === '' || !(sub === '' || (sub === '/input_items' && method === 'GET'))) return false;
    const r = stored.get(id);
    if (r === undefined) sendJson(res, 404, 0, rid, responseNotFound(id));
    else if (sub !== '') sendJson(res, 200, 0, rid, inputItemList(r, query));
    else if (method === 'GET') sendJson(res, 200, 0, rid, respPlainBody(r.n, r.created, r.model, fullText(r.sw.chunks), r.sw));
    else {
      stored.delete(id);
      sendJson(res, 200, 0, rid, JSON.stringify({ id, object: 'response', deleted: true }));
    }
    return true;
  };
  let lastModel: unknown;
  let lastModelJson = '';
  let lastModelBytes = 0;
  const modelBytes = (json: string): number => {
    if (json === lastModelJson) return lastModelBytes;
    return Buffer.byteLength(json);
  };

  const respondPlain = (res: ServerResponse, fmt: Fmt, rid: string, n: number, modelJson: string, sw: Sw): void => {
    const flavor: Flavor = fmt === MSG ? 1 : 0;
    if (sw.bytes >= 0) {
      const plan = makePlan(sw);
      const ns = '' + n;
      const tpl = PLAIN_BUILDERS[fmt](ns, '' + nowSec(), modelJson, S_X, sw);
      const x = tpl.indexOf(S_X);
      const before = tpl.slice(0, x);
      const after = tpl.slice(x + S_X.length);
      const len = Buffer.byteLength(before) + sw.bytes + Buffer.byteLength(after);
      res.writeHead(200, jsonHeaders(flavor, rid, len));
      void pump(res, plainBytes(before, plan, after), 0, noHold);
      return;
    }
    // An answer repeating what the request wrote is built whole: no template holds it.
    if (sw.echo !== NO_ECHO) {
      sendJson(res, 200, flavor, rid, PLAIN_BUILDERS[fmt]('' + n, '' + nowSec(), modelJson, fullText(sw.chunks), sw));
      return;
    }
    const t = templateFor(fmt, sw);
    const parts = t.parts;
    const holes = t.holes;
    const ns = '' + n;
    const ts = '' + nowSec();
    let body = parts[0]!;
    let bytes = t.staticBytes;
    for (let i = 0; i < holes.length; i++) {
      const h = holes[i];
      let v: string;
      if (h === HOLE_N) {
        v = ns;
        bytes += v.length;
      } else if (h === HOLE_T) {
        v = ts;
        bytes += v.length;
      } else {
        v = modelJson;
        bytes += modelBytes(modelJson);
      }
      body += v + parts[i + 1]!;
    }
    sendJson(res, 200, flavor, rid, body, bytes);
  };

  const respond = (res: ServerResponse, fmt: Fmt, rid: string, n: number, body: Record<string, unknown>, sw: Sw, afterHold = false): void => {
    if (res.destroyed) return;
    // A plain answer or an error is held before anything is sent (a stream, inside pump).
    if (sw.hold !== null && !afterHold && (body.stream !== true || sw.status !== 0)) {
      res.on('error', noop);
      void holdWaitFor(sw.hold)(res).then(() => respond(res, fmt, rid, n, body, sw, true));
      return;
    }
    const flavor: Flavor = fmt === MSG ? 1 : 0;
    if (fmt === MSG && body.max_tokens === undefined) {
      sendJson(res, 400, 1, rid, MAX_TOKENS_MISSING);
      return;
    }
    if (sw.status !== 0) {
      const body = sw.status === 401 ? refusedCredentialBody(flavor, presentedCredential(res.req.headers).credential) : statusErrorBody(flavor, sw.status);
      sendJson(res, sw.status, flavor, rid, body);
      return;
    }
    const model = body.model;
    let modelJson: string;
    if (typeof model !== 'string') modelJson = DEFAULT_MODEL_JSON[fmt];
    else if (model === lastModel) modelJson = lastModelJson;
    else {
      modelJson = JSON.stringify(model);
      lastModel = model;
      lastModelJson = modelJson;
      lastModelBytes = Buffer.byteLength(modelJson);
    }
    // The tier the request asked for is the one reported ("auto" is answered as "default"),
    // unless the switches say which tier the provider used.
    if (fmt !== MSG && sw.tier === null && typeof body.service_tier === 'string') {
      const tier = body.service_tier === 'auto' ? 'default' : body.service_tier;
      sw = { ...sw, tier, extraKey: sw.extraKey + '|' + tier };
    }
    if (fmt === RESP) {
      const echo = responseEcho(body);
      if (echo !== NO_ECHO) sw = { ...sw, echo };
      remember(n, modelJson, sw, body.input);
    }
    if (body.stream !== true) {
      respondPlain(res, fmt, rid, n, modelJson, sw);
      return;
    }
    const so = body.stream_options as { include_usage?: unknown } | null | undefined;
    const ctx: StreamCtx = {
      n: '' + n,
      created: '' + nowSec(),
      model: modelJson,
      sw,
      plan: makePlan(sw),
      includeUsage: fmt === CHAT && so !== null && typeof so === 'object' && so.include_usage === true,
    };
    res.writeHead(200, sseHeaders(flavor, rid));
    void pump(res, STREAMS[fmt](ctx), sw.chunkDelayMs, sw.hold === null ? noHold : holdWaitFor(sw.hold), sw.separateWrites ? 'sends' : sw.writePerEvent ? 'chunks' : 'batch');
  };

  const handle = (req: IncomingMessage, res: ServerResponse, url: string, text: string): void => {
    const n = ++counter;
    const rid = 'req_mock_' + n;
    if (record) requests.push({ method: req.method ?? '', path: url, headers: req.headers, body: text });
    if (refuseAll !== null && refusedByAll(text)) {
      const flavor = presentedCredential(req.headers).flavor;
      const body = refuseAll.insufficientQuota ? INSUFFICIENT_QUOTA : statusErrorBody(flavor, refuseAll.status);
      res.writeHead(refuseAll.status, statusMessage(refuseAll.status), [...jsonHeaders(flavor, rid, Buffer.byteLength(body)), ...refuseAll.headers]);
      res.end(body);
      return;
    }
    if (refused.size !== 0) {
      const { credential, flavor } = presentedCredential(req.headers);
      const status = refused.get(credential);
      if (status === 401) return sendJson(res, 401, flavor, rid, refusedCredentialBody(flavor, credential));
      if (status !== undefined) return sendJson(res, status, flavor, rid, statusErrorBody(flavor, status));
    }
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const method = req.method;
    let fmt: Fmt;
    if (method === 'POST' && path === '/v1/chat/completions') fmt = CHAT;
    else if (method === 'POST' && path === '/v1/responses') fmt = RESP;
    else if (method === 'POST' && path === '/v1/messages') fmt = MSG;
    else if (method === 'GET' && path === '/v1/models') {
      const h = req.headers;
      const anthropic = h['anthropic-version'] !== undefined || (h['x-api-key'] !== undefined && h.authorization === undefined);
      if (!anthropic) return sendJson(res, 200, 0, rid, openaiModels);
      const page = anthropicModelPage(url.slice(path.length + 1), anthropicModels);
      if (page === null) sendJson(res, 400, 1, rid, anthropicError('invalid_request_error', 'limit: Input should be an integer from 1 to 1000'));
      else sendJson(res, 200, 1, rid, page);
      return;
    } else if ((method === 'GET' || method === 'DELETE') && path.startsWith('/v1/responses/') && storedResponse(res, method, path.slice('/v1/responses/'.length), url.slice(path.length), rid)) {
      return;
    } else {
      sendJson(
        res,
        404,
        0,
        rid,
        openaiError('Unknown request URL: ' + method + ' ' + path + '. Please check the URL for typos.', 'invalid_request_error', 'unknown_url'),
      );
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      if (fmt === MSG) sendJson(res, 400, 1, rid, BAD_JSON_ANTHROPIC);
      else sendJson(res, 400, 0, rid, BAD_JSON_OPENAI);
      return;
    }
    const b = body as Record<string, unknown>;
    // A conversation continued from a response this provider never made (or no longer has).
    if (fmt === RESP && typeof b.previous_response_id === 'string' && !stored.has(b.previous_response_id)) {
      sendJson(res, 400, 0, rid, previousNotFound(b.previous_response_id));
      return;
    }
    const sw = b.mock === undefined ? DEFAULT_SW : readSwitches(b.mock);
    // mock.requestId: answer with this x-request-id, as compatible upstreams and caches that
    // repeat one do.
    const given = (b.mock as { requestId?: unknown } | undefined)?.requestId;
    const id = typeof given === 'string' && /^[\x21-\x7e]{1,200}$/.test(given) ? given : rid;
    if (paused) {
      res.on('error', noop);
      waiting.push(() => respond(res, fmt, id, n, b, sw));
    } else if (sw.delayMs > 0) {
      res.on('error', noop);
      setTimeout(respond, sw.delayMs, res, fmt, id, n, b, sw).unref();
    } else {
      respond(res, fmt, id, n, b, sw);
    }
  };

  const server = http.createServer({ noDelay: true }, (req, res) => {
    const url = req.url ?? '/';
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => {
      chunks.push(c);
    });
    req.on('end', () => {
      const text = chunks.length === 0 ? '' : chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
      handle(req, res, url, text);
    });
  });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });

  const addr = server.address();
  const port = addr !== null && typeof addr === 'object' ? addr.port : 0;
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? '[' + host + ']' : host;

  let closing: Promise<void> | undefined;
  return {
    url: 'http://' + urlHost + ':' + port,
    port,
    requests,
    pause(): void {
      paused = true;
    },
    release(tag?: string): number {
      if (tag !== undefined) {
        released.add(tag);
        const held = [...holdTag(tag).held];
        for (const go of held) go();
        return held.length;
      }
      paused = false;
      const held = waiting;
      waiting = [];
      for (const answer of held) answer();
      return held.length;
    },
    get held(): number {
      return waiting.length;
    },
    refuseCredential(credential: string, status: 401 | 403 = 401): void {
      refused.set(credential, status);
    },
    acceptCredential(credential: string): void {
      refused.delete(credential);
    },
    refuseAll(status: number, options: RefuseAllOptions = {}): void {
      refuseAll = { status, headers: Object.entries(options.headers ?? {}).flat(), insufficientQuota: options.insufficientQuota === true, model: options.model };
    },
    answerAll(): void {
      refuseAll = null;
    },
    refuseConnections(): Promise<void> {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
    acceptConnections(): Promise<void> {
      return new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve();
        });
      });
    },
    waitHeld(tag: string, count = 1): Promise<void> {
      const h = holdTag(tag);
      if (h.reached >= count) return Promise.resolve();
      return new Promise((resolve) => h.waiters.push({ count, resolve }));
    },
    close(): Promise<void> {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

// ---------------------------------------------------------------------------
// Direct execution: node dist/mock/provider.js --port 8080 [--host 0.0.0.0]

function isEntryPoint(): boolean {
  // In the single binary every bundled module has the executable's URL, and the executable is
  // tollgate's command line, never this module's.
  if (isSea()) return false;
  const argv1 = process.argv[1];
  if (argv1 === undefined) return false;
  try {
    return import.meta.url === pathToFileURL(argv1).href;
  } catch {
    return false;
  }
}

async function runFromCommandLine(): Promise<void> {
  const args = process.argv.slice(2);
  const argValue = (name: string): string | undefined => {
    const i = args.indexOf(name);
    if (i !== -1) return args[i + 1];
    const eq = args.find((a) => a.startsWith(name + '='));
    return eq === undefined ? undefined : eq.slice(name.length + 1);
  };
  const portArg = argValue('--port');
  const port = portArg === undefined ? 0 : Number(portArg);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write('invalid --port: ' + String(portArg) + '\n');
    process.exit(2);
  }
  const hostArg = argValue('--host');
  const mock = await startMockProvider({ port, record: false, ...(hostArg !== undefined ? { host: hostArg } : {}) });
  process.stdout.write('mock provider listening on ' + mock.url + '\n');
  const stop = (): void => {
    void mock.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

// A function rather than top-level await: the single binary's bundle is CommonJS.
if (isEntryPoint()) void runFromCommandLine();
