import type { EventSourceMessage } from 'eventsource-parser';
import type { Endpoint } from '../config/types.js';
import type { LeverSpec } from './levers.js';
import type { ReferenceCheck } from './references.js';
import type { UsageSchema } from './usage-read.js';
import type { RequestBody } from '../http/body.js';
import type { RequestFacts } from './model.js';

/**
 * Token counts normalised across formats. `input` counts every input token (cached reads,
 * cache writes, audio and image tokens included); `output` every output token (reasoning,
 * audio and image included). The other counts say how many of them were of a kind that is
 * priced differently.
 */
export interface Usage {
  input: number;
  /** Of `input`: cache reads. */
  cachedInput: number;
  /** Of `input`: cache writes of any duration. */
  cacheWrite: number;
  /** Of `cacheWrite`: writes to the 1-hour cache (Anthropic's `ephemeral_1h_input_tokens`). */
  cacheWrite1h: number;
  /** Of `input`: audio and image tokens. */
  audioInput: number;
  imageInput: number;
  output: number;
  /** Of `output`: reasoning (kept for the record; priced as output). */
  reasoning: number;
  /** Of `output`: audio and image tokens. */
  audioOutput: number;
  imageOutput: number;
  /** Calls of server-side tools that carry a fee per call, by fee name (`web_search`, …). */
  toolCalls: Record<string, number>;
  /** The service tier the provider reports it used; null for none reported. */
  serviceTier: string | null;
  /** The speed the provider reports it used (Anthropic's `usage.speed`); null for none reported. */
  speed: string | null;
  /** The inference geography the provider reports (Anthropic's `usage.inference_geo`); null for none reported. */
  inferenceGeo: string | null;
  /**
   * The passes of a call the provider reports one by one (Anthropic's `usage.iterations`: a
   * compaction pass, then the message), each priced on its own; the counts above are their sums.
   * Null when the usage came whole.
   */
  parts: TokenCounts[] | null;
  /**
   * The request asked for extended prompt-cache retention (OpenAI's `prompt_cache_retention`):
   * its cache writes are priced at the extended rate. No answer reports it; the request's own
   * option is all there is (one named without a price is refused before forwarding).
   */
  extendedCache: boolean;
}

/** The token counts of a usage, or of one pass of a call reported in parts. */
export type TokenCounts = Pick<Usage, 'input' | 'cachedInput' | 'cacheWrite' | 'cacheWrite1h' | 'audioInput' | 'imageInput' | 'output' | 'reasoning' | 'audioOutput' | 'imageOutput'>;

export function emptyCounts(): TokenCounts {
  return { input: 0, cachedInput: 0, cacheWrite: 0, cacheWrite1h: 0, audioInput: 0, imageInput: 0, output: 0, reasoning: 0, audioOutput: 0, imageOutput: 0 };
}

export function emptyUsage(): Usage {
  // Written out rather than spread from emptyCounts(): one object per answer, not two.
  return {
    input: 0, cachedInput: 0, cacheWrite: 0, cacheWrite1h: 0, audioInput: 0, imageInput: 0, output: 0, reasoning: 0, audioOutput: 0, imageOutput: 0,
    toolCalls: {}, serviceTier: null, speed: null, inferenceGeo: null, parts: null, extendedCache: false,
  };
}

/** What a stream has told the tap so far. */
export interface StreamState {
  /**
   * The usage object as reported so far (for Messages, message_start's merged with the counts
   * every message_delta restates); read against the adapter's schema when the stream ends.
   */
  usage: Record<string, unknown> | undefined;
  /** Why the usage cannot be read, when an event that carries it could not be parsed. */
  problem: string | null;
  /** The service tier the stream reports outside its usage object (Chat, Responses). */
  serviceTier: string | null;
  /** Fee-bearing tool calls counted from output items (Responses). */
  toolCalls: Record<string, number> | null;
  /** Set when the provider reported an error inside the stream: the marker for the usage record. */
  failure: string | null;
  /** The id of the stored response the stream made, from its terminal event (Responses); null before or without one. */
  responseId: string | null;
}

/**
 * One wire format as data: where usage sits in a plain response and which stream events carry
 * it, which counts an answer must report to be read completely, and which request fields
 * change the price. The pipeline never branches on the format anywhere else.
 */
export interface FormatAdapter {
  endpoint: Endpoint;
  /**
   * The body's fields that cap a call's output tokens, any of which may be set (the largest
   * counts); when none is, the model's `maxOutputTokens` does.
   */
  outputCapFields: readonly string[];
  /** A field asking for several answers to one prompt (Chat Completions' `n`): the cap counts once per answer. */
  choicesField?: string;
  /** The counts of a usage object and how they add up (see usage-read.ts). */
  usage: UsageSchema;
  /**
   * Where the service tier the provider used sits outside the usage object: a top-level string
   * field of the plain body and of the stream event that carries the usage. Undefined when the
   * format reports it inside usage (Messages) or not at all.
   */
  tierField?: string;
  /** Output item types that are calls of fee-bearing server tools, by fee name (Responses). */
  toolItems?: Readonly<Record<string, string>>;
  /**
   * For formats whose provider stores the responses it makes (Responses): the request field
   * naming a stored response that a call continues. Their answers carry their own response's
   * id (a plain answer's top-level `id`; a stream's terminal event's `response.id`), which the
   * usage tap reads (`UsageTap.responseId`) so that the response is recorded as the account's.
   */
  previousResponseField?: string;
  /** Request fields that change what the provider charges (see levers.ts). */
  levers: LeverSpec;
  /**
   * The top-level request members that may refer to objects stored on the provider's account,
   * each with its check (see references.ts): such a request is refused, never forwarded.
   */
  references: Readonly<Record<string, ReferenceCheck>>;
  /** Reads one server-sent event; parses JSON only for the events that carry usage or errors. */
  onEvent(state: StreamState, event: EventSourceMessage): void;
  /**
   * Where, at or after `from`, these bytes (whole events, LF line endings) hold the first sign of
   * an event that `onEvent` acts on; -1 when none. The usage tap gives `onEvent` only the events
   * that hold such a sign, so the test is a byte search, never a parse, and an event
   * without one is never cut out of its read. A false positive costs one event's parse; a false
   * negative would lose usage, so anything unsure is a sign.
   */
  usageSignAt(bytes: Buffer, from: number): number;
  /**
   * The output text an event adds, or undefined. Used only to estimate output tokens when a
   * call ends without the provider's usage, so it is a cheap regex, not a JSON parse.
   */
  deltaText(event: EventSourceMessage): string | undefined;
  /**
   * For formats whose streams report usage only on request (Chat Completions): the body to send
   * instead so that the provider reports it, or undefined when the body already asks.
   */
  streamUsageRequest?(facts: RequestFacts): RequestBody | undefined;
}

/** MarkerSearch.jump: the flag of a byte that ends a marker's window, and the mask of the shift. */
const ENDS = 0x80;
const SHIFT = 0x7f;

/**
 * The first offset, at or after `from`, where any of a few fixed byte strings starts (-1: none):
 * what a format's `usageSignAt` looks for in every read of a stream.
 *
 * One pass in JavaScript rather than a native search per marker: a call into `Buffer.indexOf`
 * costs more than this loop costs for a whole event (a Messages event: ≈ 550 ns with its three
 * markers searched natively, ≈ 80–120 ns with this; bench/README.md, History, "2026-11-29,
 * second"). It skips as Horspool's search does, over the set: a window as long as the shortest
 * marker, the byte at its end saying how far on the next marker can start and whether one can end
 * there (`jump`), and the markers that start with the window's first byte (`startsWith`) then
 * checked byte by byte.
 */
export class MarkerSearch {
  private readonly markers: Buffer[];
  /** The shortest marker's length. */
  private readonly window: number;
  /** For the byte at the window's end: the shift to the next place a marker can start, plus ENDS when a marker can end there. */
  private readonly jump = new Uint8Array(256);
  /** For a byte: the markers (bit i: markers[i]) that start with it. */
  private readonly startsWith = new Uint32Array(256);

  constructor(markers: readonly string[]) {
    this.markers = markers.map((m) => Buffer.from(m));
    if (this.markers.length === 0 || this.markers.length > 32) throw new Error('MarkerSearch: 1 to 32 markers');
    this.window = Math.min(...this.markers.map((m) => m.length));
    if (this.window === 0 || this.window >= ENDS) throw new Error(`MarkerSearch: markers of 1 to ${ENDS - 1} bytes`);
    const end = this.window - 1;
    this.jump.fill(this.window);
    this.markers.forEach((m, index) => {
      for (let i = 0; i < end; i++) this.jump[m[i]!] = Math.min(this.jump[m[i]!]!, end - i);
      this.startsWith[m[0]!]! |= 1 << index;
    });
    for (const m of this.markers) this.jump[m[end]!]! |= ENDS;
  }

  firstAt(bytes: Buffer, from: number): number {
    const jump = this.jump;
    const end = this.window - 1;
    const last = bytes.length - this.window;
    for (let at = Math.max(0, from); at <= last; ) {
      const j = jump[bytes[at + end]!]!;
      if (j >= ENDS && this.startsAt(bytes, at)) return at;
      at += j & SHIFT;
    }
    return -1;
  }

  /** Whether one of the markers starts at `at`. */
  private startsAt(bytes: Buffer, at: number): boolean {
    const which = this.startsWith[bytes[at]!]!;
    if (which === 0) return false;
    const markers = this.markers;
    for (let index = 0; index < markers.length; index++) {
      if ((which & (1 << index)) === 0) continue;
      const m = markers[index]!;
      if (at + m.length > bytes.length) continue;
      let i = 1;
      while (i < m.length && bytes[at + i] === m[i]) i++;
      if (i === m.length) return true;
    }
    return false;
  }
}

/** The decoded JSON string literal captured by `pattern`'s first group, or undefined. */
export function capturedString(data: string, pattern: RegExp): string | undefined {
  const m = pattern.exec(data);
  if (m === null) return undefined;
  try {
    return JSON.parse(`"${m[1]}"`) as string;
  } catch {
    return undefined;
  }
}

export function isObject(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null;
}

/** A JSON object parsed from `data`, or undefined (not JSON, or not an object). */
export function parseObject(data: string): Record<string, any> | undefined {
  try {
    const v: unknown = JSON.parse(data);
    return isObject(v) && !Array.isArray(v) ? v : undefined;
  } catch {
    return undefined;
  }
}
