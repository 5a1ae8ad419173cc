import { TextDecoder } from 'node:util';
import { createParser, type EventSourceParser } from 'eventsource-parser';
import { NO_LEVERS, type RequestLevers } from '../formats/levers.js';
import { isResponseId, LONGEST_ID_VALUE } from '../formats/responses.js';
import { MAX_MEMBERS, TopLevelScanner, Vocabulary } from '../formats/top-level-scanner.js';
import { FORMATS } from '../formats/index.js';
import type { FormatAdapter, StreamState, Usage } from '../formats/types.js';
import { readUsage, type Reading } from '../formats/usage-read.js';

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
 * never arrive) and asks the format where the chunk's whole events show a sign of usage or an
 * error (byte searches, `FormatAdapter.usageSignAt`). Only the events around those signs are
 * decoded and given to eventsource-parser and the format's `onEvent`; every other event costs
 * nothing more, even when a read brings many. The bytes of an event split across chunks are
 * carried until its end. A stream with CR line endings (allowed by SSE, sent by no provider we
 * know) is parsed whole instead, as decoding line ends by byte search is only exact for LF.
 *
 * Plain JSON answers go through PlainAnswer as they arrive: only the answer's own top-level
 * members are read, never a text search, since an answer repeats what the client wrote
 * (OpenAI's Responses object echoes `metadata` and `user` after `usage`).
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
  /** A plain answer's reader (null for a stream). */
  private readonly plain: PlainAnswer | null;
  /** Bytes of response body seen. */
  bytesSeen = 0;

  constructor(private readonly format: FormatAdapter, readonly stream: boolean, private readonly levers: RequestLevers = NO_LEVERS) {
    const state = this.state;
    this.parser = stream ? createParser({ onEvent: (event) => format.onEvent(state, event) }) : null;
    this.plain = stream ? null : new PlainAnswer(format);
  }

  write(chunk: Buffer): void {
    this.bytesSeen += chunk.length;
    if (this.parser === null) return this.plain!.write(chunk);
    this.keepTail(chunk);
    if (this.decoder !== null) {
      this.parser.feed(this.decoder.decode(chunk, { stream: true }));
      return;
    }
    if (chunk.indexOf(CR) !== -1) return this.parseWhole(chunk);
    // Just past the chunk's last blank line; 0 when it has none. Most reads end an event.
    const length = chunk.length;
    let cut = length >= 2 && chunk[length - 1] === LF && chunk[length - 2] === LF ? length : chunk.lastIndexOf(LF2) + 2;
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
      if (this.format.usageSignAt(first, 0) !== -1) this.parser.feed(first.toString('utf8'));
    }
    this.carry = cut === chunk.length ? NONE : [Buffer.from(chunk.subarray(cut))];
    if (from < cut) this.parseMarked(chunk, from, cut);
  }

  private carryEndsLF(): boolean {
    const last = this.carry[this.carry.length - 1];
    return last !== undefined && last[last.length - 1] === LF;
  }

  /**
   * Gives the parser those whole events of bytes[from, to) that hold a sign of usage or an error
   * (FormatAdapter.usageSignAt), each decoded whole; the others are never cut out of the read.
   * `from` starts an event and `to` ends one (just past a blank line), so the event around a sign
   * runs from the blank line before it to the one after it.
   */
  private parseMarked(bytes: Buffer, from: number, to: number): void {
    const format = this.format;
    for (let at = format.usageSignAt(bytes, from); at !== -1 && at < to;) {
      const before = bytes.lastIndexOf(LF2, at);
      const start = before === -1 ? from : Math.max(from, before + 2);
      const end = bytes.indexOf(LF2, at) + 2;
      this.parser!.feed(bytes.toString('utf8', start, end));
      at = end < to ? format.usageSignAt(bytes, end) : -1;
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
        if (this.format.usageSignAt(carry, 0) !== -1) this.parser.feed(carry.toString('utf8'));
      }
      // A final event without its blank line still counts (the provider closed right after it).
      this.parser.feed('\n\n');
    } else {
      this.plain!.end(state);
    }
    this.result = this.read();
  }

  /**
   * The id of the stored response this answer made, for formats whose provider stores them
   * (FormatAdapter.previousResponseField), read from the answer's own structure: a stream's
   * terminal event, a plain answer's top-level `id` (never a text search, which a client's
   * words echoed inside the answer could fool). Null when the answer carries none that can be a
   * response id.
   */
  get responseId(): string | null {
    return this.state.responseId;
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
    const implied = this.levers.impliedToolCalls;
    for (const tool in implied) usage.toolCalls[tool] = Math.max(usage.toolCalls[tool] ?? 0, implied[tool]!);
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

/**
 * What a plain answer's reader knows of the answer's top-level members. Names outside it are
 * walked over, whatever they hold; the `type` of the items of a top-level array is told apart
 * for the fee-bearing tool calls of every format (FormatAdapter.toolItems).
 */
const ANSWER_NAMES = new Vocabulary({
  members: ['usage', 'id', 'output', ...new Set(Object.values(FORMATS).flatMap((f) => (f.tierField === undefined ? [] : [f.tierField])))],
  itemTypes: [...new Set(Object.values(FORMATS).flatMap((f) => Object.keys(f.toolItems ?? {})))],
});
const USAGE = ANSWER_NAMES.code('usage');
const ID = ANSWER_NAMES.code('id');
const OUTPUT = ANSWER_NAMES.code('output');
const ITEM_TYPES = ANSWER_NAMES.spec.itemTypes!;

/**
 * The answer reader's limits, its own rather than the request's: answers can be megabytes (no
 * bound on size: the walk keeps nothing of what it passes) and hold what the client sent a few
 * levels below their top (a JSON schema echoed in `text.format` or `tools`), so their nesting
 * may pass the request's own limit (`limits.maxJsonDepth`, at most 4096).
 */
const ANSWER_MAX_DEPTH = 8192;
/** Bytes kept of a `usage` member (a usage object is a few hundred): past it, unreadable. */
const MAX_USAGE_BYTES = 64 * 1024;
/** Bytes kept of a service tier (a short word): past it, unreadable. */
const MAX_TIER_BYTES = 1024;

/** A member's value past its limit, or (never expected: the walk has checked it) one that does not parse. */
const TOO_LONG = Symbol('too long');

function parsed(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    return TOO_LONG;
  }
}

/**
 * A plain answer read as its bytes arrive: the request scanner's top-level walk (one pass, fed
 * chunk by chunk, no re-scan at the end) with the answer's vocabulary and limits. Only the bytes
 * of the members billed from are kept: `usage` (parsed alone), the format's tier field and `id`;
 * the fee-bearing tool calls are counted from the `type` of the items of the top-level `output`
 * array as the walk passes them. What a client wrote and the answer repeats (`metadata`, `user`,
 * `instructions`, schemas, tools) is walked over like any other member, so no text inside it can
 * be taken for the answer's own. An answer the walk cannot read (not JSON, past its limits), or
 * that names `usage`, the tier or `output` twice, is unreadable: estimated, `usage_malformed`.
 */
class PlainAnswer {
  private readonly scanner = new TopLevelScanner(ANSWER_MAX_DEPTH, ANSWER_NAMES, MAX_MEMBERS);
  private readonly tierCode: number;
  /** Members already looked at (indices in the scanner's). */
  private taken = 0;
  /** The bytes so far of a kept member whose value began in an earlier chunk (copies). */
  private part: Buffer[] | null = null;
  private partBytes = 0;
  private failed = false;
  /** What the members read said (parsed from their bytes alone), undefined while absent. */
  private usage: unknown;
  private tier: unknown;
  private id: unknown;
  /** A usage or tier member was longer than its limit. */
  private tooLong = false;

  constructor(private readonly format: FormatAdapter) {
    this.tierCode = format.tierField === undefined ? -1 : ANSWER_NAMES.code(format.tierField);
  }

  /** The most bytes kept of the member with this name code; 0 for a member not kept. */
  private limit(name: number): number {
    if (name === USAGE) return MAX_USAGE_BYTES;
    if (name === this.tierCode) return MAX_TIER_BYTES;
    if (name === ID && this.format.previousResponseField !== undefined) return LONGEST_ID_VALUE;
    return 0;
  }

  write(chunk: Buffer): void {
    if (this.failed) return;
    const scanner = this.scanner;
    const at = scanner.scanned;
    if (!scanner.write(chunk)) {
      this.failed = true;
      this.part = null;
      return;
    }
    const members = scanner.members;
    for (; this.taken < members.length; this.taken++) {
      const m = members[this.taken]!;
      const limit = this.limit(m.name);
      if (limit === 0) continue;
      const rest = chunk.subarray(Math.max(m.valueStart - at, 0), m.valueEnd - at);
      const part = this.part;
      this.part = null;
      const bytes = m.valueEnd - m.valueStart;
      // An id too long for a response id is none; a longer usage or tier cannot be trusted.
      const value: unknown = bytes > limit ? TOO_LONG : parsed(part === null ? rest : Buffer.concat([...part, rest], bytes));
      if (value === TOO_LONG && m.name !== ID) this.tooLong = true;
      else if (m.name === USAGE) this.usage = value;
      else if (m.name === ID) this.id = value;
      else this.tier = value;
    }
    // A kept member still being read: its bytes so far, copied (a reference would keep the
    // provider's whole read alive), up to its limit.
    const start = scanner.openStart;
    if (start === -1) return;
    const limit = this.limit(scanner.openName);
    if (limit === 0) return;
    const piece = chunk.subarray(Math.max(start - at, 0));
    this.partBytes = (this.part === null ? 0 : this.partBytes) + piece.length;
    if (this.partBytes > limit) this.part = [];
    else (this.part ??= []).push(Buffer.from(piece));
  }

  /** The answer is complete: what it says goes into `state`, as a stream's events would. */
  end(state: StreamState): void {
    const scanner = this.scanner;
    const doubled = scanner.repeated & ((1 << USAGE) | (1 << OUTPUT) | (this.tierCode === -1 ? 0 : 1 << this.tierCode));
    if (this.failed || !scanner.end() || this.tooLong || doubled !== 0) {
      state.problem = 'usage_malformed';
      return;
    }
    const usage = this.usage;
    if (usage !== undefined && usage !== null && (typeof usage !== 'object' || Array.isArray(usage))) state.problem = 'usage_malformed';
    else state.usage = (usage ?? undefined) as Record<string, unknown> | undefined;
    if (typeof this.tier === 'string') state.serviceTier = this.tier;
    if (typeof this.id === 'string' && isResponseId(this.id)) state.responseId = this.id;
    const toolItems = this.format.toolItems;
    if (toolItems !== undefined) state.toolCalls = this.toolCalls(toolItems);
  }

  /** The fee-bearing tool calls among the items of the top-level `output` array, by fee name. */
  private toolCalls(toolItems: Readonly<Record<string, string>>): Record<string, number> {
    const calls: Record<string, number> = {};
    const items = this.scanner.items;
    if (items === null) return calls;
    const members = this.scanner.members;
    for (let i = 0; i < items.length; i += 2) {
      if (members[items[i]!]!.name !== OUTPUT) continue;
      const type = ITEM_TYPES[items[i + 1]! - 1]!;
      const fee = Object.hasOwn(toolItems, type) ? toolItems[type]! : undefined;
      if (fee !== undefined) calls[fee] = (calls[fee] ?? 0) + 1;
    }
    return calls;
  }
}
