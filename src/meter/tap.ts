import { TextDecoder } from 'node:util';
import { createParser, type EventSourceParser } from 'eventsource-parser';
import { NO_LEVERS, type RequestLevers } from '../formats/levers.js';
import { isResponseId } from '../formats/responses.js';
import { TopLevelScanner } from '../formats/top-level-scanner.js';
import type { FormatAdapter, StreamState, Usage } from '../formats/types.js';
import { readUsage, type Reading } from '../formats/usage-read.js';

/** Plain bodies are parsed whole up to this size; past it only a tail window is kept. */
const WHOLE_BODY_LIMIT = 4 * 1024 * 1024;
const TAIL_WINDOW = 256 * 1024;
/**
 * The last bytes of a stream kept for an output estimate (read only when usage never arrives;
 * scaled from this sample to every byte seen). Small, because every open stream holds it.
 */
const STREAM_TAIL = 4 * 1024;

const LF2 = Buffer.from('\n\n');
const CR = 0x0d;
const LF = 0x0a;
/** An empty carry, shared (replaced, never pushed to: see write). */
const NONE: Buffer[] = [];

/**
 * A passive tap on the provider's response: it sees the same chunks the client gets and never
 * delays, re-splits or re-encodes them.
 *
 * Streams: per chunk the tap counts bytes, keeps a bounded tail (for an estimate should usage
 * never arrive) and asks the format whether the chunk's whole events may carry usage (a few
 * native byte searches, `FormatAdapter.mayCarryUsage`). Only those events are decoded and
 * given to eventsource-parser and the format's `onEvent`; every other event costs nothing
 * more. The bytes of an event split across chunks are carried until its end. A stream with CR
 * line endings (allowed by SSE, sent by no provider we know) is parsed whole instead, as
 * decoding line ends by byte search is only exact for LF. Plain JSON bodies are kept as chunk
 * references and parsed once at the end; a body too large for that keeps a tail window, since
 * every format puts `usage` after the content.
 */
export class UsageTap {
  private readonly state: StreamState = { usage: undefined, problem: null, serviceTier: null, toolCalls: null, failure: null, responseId: null };
  private result: Reading | undefined;
  private readonly parser: EventSourceParser | null;
  /** Set once a CR is seen: from then on every byte goes through the decoder and the parser. */
  private decoder: TextDecoder | null = null;
  /** The start of an event whose end has not arrived yet, in the chunks it came in (LF mode). */
  private carry: Buffer[] = NONE;
  /** The stream's last bytes, as a ring once it is full (see STREAM_TAIL). */
  private tail: Buffer | null = null;
  private tailAt = 0;
  private tailFull = false;
  private chunks: Buffer[] = [];
  private kept = 0;
  private truncated = false;
  /** A plain answer's response id (see responseId), read when the body ended. */
  private plainResponseId: string | null = null;
  /** Bytes of response body seen. */
  bytesSeen = 0;

  constructor(private readonly format: FormatAdapter, readonly stream: boolean, private readonly levers: RequestLevers = NO_LEVERS) {
    const state = this.state;
    this.parser = stream ? createParser({ onEvent: (event) => format.onEvent(state, event) }) : null;
  }

  write(chunk: Buffer): void {
    this.bytesSeen += chunk.length;
    if (this.parser === null) return this.keep(chunk);
    this.keepTail(chunk);
    if (this.decoder !== null) {
      this.parser.feed(this.decoder.decode(chunk, { stream: true }));
      return;
    }
    if (chunk.indexOf(CR) !== -1) return this.parseWhole(chunk);
    // Just past the chunk's last blank line; 0 when it has none.
    let cut = chunk.lastIndexOf(LF2) + 2;
    if (cut === 1) cut = chunk[0] === LF && this.carryEndsLF() ? 1 : 0;
    const carry = this.carry;
    if (cut === 0) {
      // Copies: a reference would keep the provider's whole read alive until the event ends.
      if (carry === NONE) this.carry = [Buffer.from(chunk)];
      else carry.push(Buffer.from(chunk));
      return;
    }
    // The event begun in earlier chunks ends in this one: only that event is joined; the rest
    // is searched where it lies (a copy of every read would be as many bytes again for the
    // garbage collector, see forward/young-gc.ts).
    let from = 0;
    if (carry.length > 0) {
      from = chunk[0] === LF && this.carryEndsLF() ? 1 : chunk.indexOf(LF2) + 2;
      const first = Buffer.concat([...carry, chunk.subarray(0, from)]);
      if (this.format.mayCarryUsage(first)) this.parser.feed(first.toString('utf8'));
    }
    this.carry = cut === chunk.length ? NONE : [Buffer.from(chunk.subarray(cut))];
    if (from < cut) {
      const whole = chunk.subarray(from, cut);
      if (this.format.mayCarryUsage(whole)) this.parseMarked(whole);
    }
  }

  private carryEndsLF(): boolean {
    const last = this.carry[this.carry.length - 1];
    return last !== undefined && last[last.length - 1] === LF;
  }

  /** Gives the parser those of these whole events that may carry usage, each decoded whole. */
  private parseMarked(whole: Buffer): void {
    const format = this.format;
    for (let start = 0; start < whole.length;) {
      const at = whole.indexOf(LF2, start);
      const end = at === -1 ? whole.length : at + 2;
      const event = whole.subarray(start, end);
      if (format.mayCarryUsage(event)) this.parser!.feed(event.toString('utf8'));
      start = end;
    }
  }

  /** From the first CR on: the carried bytes and everything after go through the parser. */
  private parseWhole(chunk: Buffer): void {
    this.decoder = new TextDecoder('utf-8');
    for (const part of this.carry) this.parser!.feed(this.decoder.decode(part, { stream: true }));
    this.carry = NONE;
    this.parser!.feed(this.decoder.decode(chunk, { stream: true }));
  }

  private keepTail(chunk: Buffer): void {
    let tail = this.tail;
    if (chunk.length >= STREAM_TAIL) {
      if (tail === null || tail.length < STREAM_TAIL) tail = this.tail = Buffer.allocUnsafe(STREAM_TAIL);
      chunk.copy(tail, 0, chunk.length - STREAM_TAIL);
      this.tailAt = 0;
      this.tailFull = true;
      return;
    }
    // Grown by doubling until it holds STREAM_TAIL; a short stream never takes all of it.
    if (!this.tailFull && (tail === null || this.tailAt + chunk.length > tail.length)) {
      const size = Math.min(STREAM_TAIL, Math.max(512, 2 ** Math.ceil(Math.log2(this.tailAt + chunk.length))));
      if (tail === null || size > tail.length) {
        const grown = Buffer.allocUnsafe(size);
        if (tail !== null) tail.copy(grown, 0, 0, this.tailAt);
        tail = this.tail = grown;
      }
    }
    tail = tail!;
    const room = tail.length - this.tailAt;
    if (chunk.length <= room) {
      chunk.copy(tail, this.tailAt);
      this.tailAt += chunk.length;
    } else {
      chunk.copy(tail, this.tailAt, 0, room);
      chunk.copy(tail, 0, room);
      this.tailAt = chunk.length - room;
      this.tailFull = true;
    }
    if (this.tailAt === STREAM_TAIL) {
      this.tailAt = 0;
      this.tailFull = true;
    }
  }

  private keep(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.kept += chunk.length;
    if (this.kept > WHOLE_BODY_LIMIT) {
      const tail = Buffer.concat(this.chunks).subarray(-TAIL_WINDOW);
      this.chunks = [tail];
      this.kept = tail.length;
      this.truncated = true;
    }
  }

  /**
   * The output text of the kept tail and the length the whole stream's output is taken to have
   * (the tail's, scaled by the bytes seen over the bytes kept): only for an estimate, when
   * usage never arrived, so the tail is parsed here and nowhere else. A tail that starts in
   * the middle of an event costs nothing: SSE ignores a line with an unknown field name.
   */
  outputSample(): { text: string; chars: number } {
    const tail = this.tail;
    if (tail === null) return { text: '', chars: 0 };
    const bytes = this.tailFull ? Buffer.concat([tail.subarray(this.tailAt), tail.subarray(0, this.tailAt)]) : tail.subarray(0, this.tailAt);
    let text = '';
    const format = this.format;
    const parser = createParser({
      onEvent: (event) => {
        const delta = format.deltaText(event);
        if (delta !== undefined) text += delta;
      },
    });
    parser.feed(bytes.toString('utf8'));
    parser.feed('\n\n');
    const chars = bytes.length === 0 ? 0 : Math.ceil((text.length * this.bytesSeen) / bytes.length);
    return { text, chars };
  }

  /** The output text seen (of the kept tail): see outputSample. */
  get outputText(): string {
    return this.outputSample().text;
  }

  /** Called once the provider's body is complete. */
  end(): void {
    const state = this.state;
    if (this.parser !== null) {
      if (this.decoder !== null) {
        const rest = this.decoder.decode();
        if (rest) this.parser.feed(rest);
      } else if (this.carry.length > 0) {
        const carry = Buffer.concat(this.carry);
        this.carry = NONE;
        if (this.format.mayCarryUsage(carry)) this.parser.feed(carry.toString('utf8'));
      }
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
      if (format.previousResponseField !== undefined && !this.truncated) this.plainResponseId = answerId(this.chunks);
    }
    this.result = this.read();
  }

  /**
   * The id of the stored response this answer made, for formats whose provider stores them
   * (FormatAdapter.previousResponseField), read from the answer's own structure: a stream's
   * terminal event, a plain answer's top-level `id` (never a text search, which a client's
   * words echoed inside the answer could fool). Null when the answer carries none that can be a
   * response id, and for a plain answer too large to keep whole.
   */
  get responseId(): string | null {
    return this.stream ? this.state.responseId : this.plainResponseId;
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
    usage.extendedCache = this.levers.cacheWriteExtended;
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

/** Nesting an answer may have for answerId's scan (an echoed JSON schema can be deep). */
const ANSWER_MAX_DEPTH = 256;
const ID_KEY = Buffer.from('"id"');

/**
 * A plain answer's top-level `id`, when it is a string that can be a response id; else null.
 * The answer's first member is looked at first (the provider writes `id` first: no scan);
 * otherwise the request scanner's top-level walk finds it in one pass. Either way only the
 * answer's own member is taken, never one nested inside it.
 */
function answerId(chunks: readonly Buffer[]): string | null {
  const first = chunks[0];
  if (first === undefined) return null;
  const found = firstMemberId(first);
  if (found !== undefined) return found;
  const scanner = new TopLevelScanner(ANSWER_MAX_DEPTH);
  for (const chunk of chunks) if (!scanner.write(chunk)) return null;
  if (!scanner.end()) return null;
  const body = Buffer.concat(chunks);
  let id: string | null = null;
  for (const m of scanner.members) {
    const key = body.subarray(m.keyStart, m.keyEnd);
    if (!key.equals(ID_KEY) && !(key.includes(0x5c) && JSON.parse(key.toString('utf8')) === 'id')) continue;
    const value = body[m.valueStart] === 0x22 ? JSON.parse(body.toString('utf8', m.valueStart, m.valueEnd)) as string : null;
    // The last, as JSON.parse keeps it.
    id = value !== null && isResponseId(value) ? value : null;
  }
  return id;
}

/**
 * The answer's first member when it is `id`: its value if it can be a response id, else null;
 * undefined when the first member is another, or not in this chunk whole.
 */
function firstMemberId(b: Buffer): string | null | undefined {
  let i = skipSpace(b, 0);
  if (i < b.length && b[i] !== 0x7b /* { */) return null; // not an object: no id
  i = skipSpace(b, i + 1);
  for (let k = 0; k < ID_KEY.length; k++) if (b[i + k] !== ID_KEY[k]) return undefined;
  i = skipSpace(b, i + ID_KEY.length);
  if (b[i] !== 0x3a /* : */) return undefined;
  i = skipSpace(b, i + 1);
  if (i >= b.length) return undefined;
  if (b[i] !== 0x22) return null; // not a string
  const end = b.indexOf(0x22, i + 1);
  if (end === -1) return undefined; // not in this chunk whole
  if (b.subarray(i + 1, end).includes(0x5c)) return undefined; // written with an escape: the scan decodes it
  const id = b.toString('latin1', i + 1, end);
  return isResponseId(id) ? id : null;
}

function skipSpace(b: Buffer, i: number): number {
  while (i < b.length && (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09)) i++;
  return i;
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
