import { TextDecoder } from 'node:util';
import { createParser, type EventSourceParser } from 'eventsource-parser';
import { NO_LEVERS, type RequestLevers } from '../formats/levers.js';
import type { FormatAdapter, StreamState, Usage } from '../formats/types.js';
import { readUsage, type Reading } from '../formats/usage-read.js';

/** Output text kept for an estimate; past it only its length is counted (memory stays flat). */
const TEXT_SAMPLE = 64 * 1024;
/** Plain bodies are parsed whole up to this size; past it only a tail window is kept. */
const WHOLE_BODY_LIMIT = 4 * 1024 * 1024;
const TAIL_WINDOW = 256 * 1024;

/**
 * A passive tap on the provider's response: it sees the same chunks the client gets and never
 * delays, re-splits or re-encodes them.
 *
 * Streams are decoded with one TextDecoder in stream mode (so a multi-byte character split
 * across chunks is decoded once whole) and fed to eventsource-parser; the format adapter parses
 * only the events that carry usage, and a regex collects output text for estimates. Plain JSON
 * bodies are kept as chunk references and parsed once at the end; a body too large for that
 * keeps a tail window, since every format puts `usage` after the content.
 */
export class UsageTap {
  private readonly state: StreamState = { usage: undefined, problem: null, serviceTier: null, toolCalls: null, failure: null };
  private result: Reading | undefined;
  private readonly decoder: TextDecoder | null;
  private readonly parser: EventSourceParser | null;
  private chunks: Buffer[] = [];
  private kept = 0;
  private truncated = false;
  /** The first 64 KiB of output text seen in stream deltas, for an estimate when usage never arrives. */
  outputText = '';
  /** Length of all the output text seen (the sample scales up to it). */
  outputChars = 0;
  /** Bytes of response body seen. */
  bytesSeen = 0;

  constructor(private readonly format: FormatAdapter, readonly stream: boolean, private readonly levers: RequestLevers = NO_LEVERS) {
    if (stream) {
      this.decoder = new TextDecoder('utf-8');
      const state = this.state;
      this.parser = createParser({
        onEvent: (event) => {
          format.onEvent(state, event);
          const text = format.deltaText(event);
          if (text !== undefined) {
            this.outputChars += text.length;
            if (this.outputText.length < TEXT_SAMPLE) this.outputText += text;
          }
        },
      });
    } else {
      this.decoder = null;
      this.parser = null;
    }
  }

  write(chunk: Buffer): void {
    this.bytesSeen += chunk.length;
    if (this.parser !== null) {
      this.parser.feed(this.decoder!.decode(chunk, { stream: true }));
      return;
    }
    this.chunks.push(chunk);
    this.kept += chunk.length;
    if (this.kept > WHOLE_BODY_LIMIT) {
      const tail = Buffer.concat(this.chunks).subarray(-TAIL_WINDOW);
      this.chunks = [tail];
      this.kept = tail.length;
      this.truncated = true;
    }
  }

  /** Called once the provider's body is complete. */
  end(): void {
    const state = this.state;
    if (this.parser !== null) {
      const rest = this.decoder!.decode();
      if (rest) this.parser.feed(rest);
      // A final event without its blank line still counts (the provider closed right after it).
      this.parser.feed('\n\n');
    } else {
      const text = Buffer.concat(this.chunks).toString('utf8');
      // Every format puts `usage` after the content: read that one object instead of parsing the
      // whole body. An escaped quote cannot form `"usage":` inside a string value, so the last
      // match is the real key. A body too large to keep whole was cut to its tail anyway.
      const found = lastUsageObject(text);
      if (found === MALFORMED) state.problem = 'usage_malformed';
      else state.usage = found ?? undefined;
      const format = this.format;
      if (format.tierField !== undefined) state.serviceTier = lastStringField(text, format.tierField);
      if (format.toolItems !== undefined) state.toolCalls = countTypes(text, format.toolItems);
    }
    this.result = this.read();
  }

  /** The usage as read, with the first reason it is not complete and unambiguous (null when it is). */
  private read(): Reading {
    const state = this.state;
    const reading = readUsage(state.usage, this.format.usage);
    // An event that should have carried usage could not be parsed: whatever the others said, the
    // usage is not known whole (counts read stay as a floor under the estimate).
    if (state.problem !== null) {
      reading.problem = state.problem;
      reading.known = { input: false, output: false };
    }
    const usage = reading.usage;
    if (state.serviceTier !== null) usage.serviceTier = state.serviceTier;
    if (state.toolCalls !== null) for (const [tool, n] of Object.entries(state.toolCalls)) usage.toolCalls[tool] = (usage.toolCalls[tool] ?? 0) + n;
    for (const [tool, n] of Object.entries(this.levers.impliedToolCalls)) usage.toolCalls[tool] = Math.max(usage.toolCalls[tool] ?? 0, n);
    return reading;
  }

  /** What was read of the usage once the body ended (an incomplete reading before). */
  get reading(): Reading {
    return this.result ?? this.read();
  }

  /** The usage, when it was read completely and unambiguously. */
  get usage(): Usage | undefined {
    const r = this.reading;
    return r.problem === null ? r.usage : undefined;
  }

  get failure(): string | null {
    return this.state.failure;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const MALFORMED = Symbol('malformed');

/**
 * The last `"usage"` member of a JSON text: its object, parsed; null for `"usage": null`;
 * MALFORMED for any other value or an object that does not parse; undefined when there is none.
 */
function lastUsageObject(text: string): Record<string, unknown> | null | undefined | typeof MALFORMED {
  let at = text.lastIndexOf('"usage"');
  while (at !== -1) {
    let i = at + 7;
    while (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t') i++;
    if (text[i] === ':') {
      i++;
      while (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t') i++;
      if (text.startsWith('null', i)) return null;
      if (text[i] !== '{') return MALFORMED;
      const value = parseJson(text.slice(i, objectEnd(text, i)));
      return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : MALFORMED;
    }
    at = at === 0 ? -1 : text.lastIndexOf('"usage"', at - 1);
  }
  return undefined;
}

/**
 * The value of the last `"name": "…"` member of a JSON text, or null. Escaped quotes cannot form
 * one inside a string value, and every format puts the top-level member after the content.
 */
function lastStringField(text: string, name: string): string | null {
  const at = text.lastIndexOf(`"${name}"`);
  if (at === -1) return null;
  STRING_VALUE.lastIndex = at + name.length + 2;
  const m = STRING_VALUE.exec(text);
  return m === null ? null : m[1]!;
}
const STRING_VALUE = /\s*:\s*"([^"\\]*)"/y;

const TYPE_PATTERNS = new Map<Readonly<Record<string, string>>, RegExp>();

/** How many objects of each listed `"type"` a JSON text holds, by the name the list gives them. */
function countTypes(text: string, types: Readonly<Record<string, string>>): Record<string, number> {
  let pattern = TYPE_PATTERNS.get(types);
  if (pattern === undefined) TYPE_PATTERNS.set(types, (pattern = new RegExp(`"type"\\s*:\\s*"(${Object.keys(types).join('|')})"`, 'g')));
  const calls: Record<string, number> = {};
  for (const m of text.matchAll(pattern)) {
    const fee = types[m[1]!]!;
    calls[fee] = (calls[fee] ?? 0) + 1;
  }
  return calls;
}

/** Index just past the object that opens at `start` (strings skipped), or the text's length. */
function objectEnd(text: string, start: number): number {
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++;
    } else if (c === 0x7b) depth++;
    else if (c === 0x7d && --depth === 0) return i + 1;
  }
  return text.length;
}
