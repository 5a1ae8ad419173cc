/**
 * An incremental JSON scanner for request bodies, fed chunk by chunk as the body arrives.
 *
 * It validates the whole body as JSON (the spec: a non-JSON body is 400 `model_required`) and
 * records where each member of the top-level object sits, without building any value: the
 * gateway needs `model` and `stream` on every call and other members only sometimes, and the
 * body is forwarded as the bytes received. A 30 MB body costs one pass over its bytes spread
 * over the chunks as they arrive (0.1–0.25 ms per 64 KiB chunk measured here), instead of one
 * `JSON.parse` of the whole text on a single turn of the event loop (bench/hostile-body.ts).
 *
 * Validity is JSON.parse's, checked byte by byte: the grammar of RFC 8259, no raw control
 * characters inside strings, and the bytes of a string passed through unchecked as UTF-8
 * (JSON.parse of the decoded text accepts every code point a decoder can produce). Three
 * limits make hostile bodies cheap to refuse at the byte where they are exceeded: nesting
 * deeper than `maxDepth`, more than MAX_MEMBERS top-level members, and a second top-level
 * `model`.
 */

/** Where one top-level member sits in the body: absolute byte offsets, ends exclusive. */
export interface MemberSpan {
  keyStart: number;
  keyEnd: number;
  valueStart: number;
  valueEnd: number;
}

/** Why a body was refused (all of them are `model_required` to the client). */
export type ScanFailure = 'not_json' | 'not_an_object' | 'too_deep' | 'too_many_members' | 'duplicate_model';

/**
 * Top-level members recorded at most. Request bodies of the three formats have a few dozen
 * top-level fields; maps with arbitrary keys (metadata, logit_bias) are nested. The bound keeps
 * the member index small whatever a body holds.
 */
export const MAX_MEMBERS = 1024;

/** The longest a key naming `model` or `stream` can be: every letter a \u escape, plus quotes. */
const MAX_NAME_BYTES = 6 * 6 + 2;
const MODEL_KEY = Buffer.from('"model"');
const STREAM_KEY = Buffer.from('"stream"');
const OTHER = 0;
const MODEL = 1;
const STREAM = 2;
/** `carry` once the key is longer than any name looked for. */
const TOO_LONG = Buffer.alloc(0);

// States. Numbers are walked with one state per position in the grammar.
const S_START = 0; // before the top-level value
const S_OBJ_FIRST = 1; // after '{': a key or '}'
const S_OBJ_KEY = 2; // after ',' in an object: a key
const S_COLON = 3; // after a key
const S_VALUE = 4; // a value is expected
const S_ARR_FIRST = 5; // after '[': a value or ']'
const S_AFTER = 6; // after a value: ',' or the container's closer
const S_STRING = 7;
const S_ESCAPE = 8;
const S_HEX = 9;
const S_NUM_MINUS = 10;
const S_NUM_ZERO = 11;
const S_NUM_INT = 12;
const S_NUM_DOT = 13;
const S_NUM_FRAC = 14;
const S_NUM_E = 15;
const S_NUM_ESIGN = 16;
const S_NUM_EXP = 17;
const S_LITERAL = 18;
const S_END = 19; // after the top-level object: only whitespace
const S_FAILED = 20;

const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');
const NULL = Buffer.from('null');

const OBJECT = 1;
const ARRAY = 0;

function isWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/** Whether `buf` holds `word` at `at`. */
function bytesAt(buf: Buffer, at: number, word: Buffer): boolean {
  for (let k = 0; k < word.length; k++) if (buf[at + k] !== word[k]) return false;
  return true;
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66);
}

export class TopLevelScanner {
  /** Every top-level member in body order (duplicates included). */
  readonly members: MemberSpan[] = [];
  /** Index in `members` of the one `model` member, or -1. */
  modelIndex = -1;
  /** Index in `members` of the last `stream` member (JSON.parse keeps the last), or -1. */
  streamIndex = -1;
  failure: ScanFailure | null = null;

  private state = S_START;
  private depth = 0;
  /** OBJECT or ARRAY per open level (index = depth; a plain array: no allocation up front). */
  private readonly stack: number[] = [0];
  /** Absolute offset of the current chunk's first byte. */
  private offset = 0;
  private stringIsKey = false;
  private literal: Buffer = TRUE;
  private literalAt = 0;
  private hexLeft = 0;
  // The top-level member being read.
  private keyStart = 0;
  private keyEnd = 0;
  private keyName = OTHER;
  private valueStart = 0;
  /** Inside a top-level key (its name is decided when it ends). */
  private inKey = false;
  private keyEscaped = false;
  /** The start of a top-level key that began in an earlier chunk (rare), or null. */
  private carry: Buffer | null = null;

  constructor(private readonly maxDepth: number) {}

  /** Scans the next chunk. False once the body is known to be refused (then `failure` says why). */
  write(chunk: Buffer): boolean {
    if (this.state === S_FAILED) return false;
    const n = chunk.length;
    const offset = this.offset;
    this.offset += n;
    let state = this.state;
    let i = 0;
    while (i < n) {
      const c = chunk[i]!;
      switch (state) {
        case S_STRING: {
          // The fast path: most of a body's bytes are inside strings.
          const from = i;
          let d = c;
          while (d !== 0x22 && d !== 0x5c && d >= 0x20) {
            if (++i === n) break;
            d = chunk[i]!;
          }
          if (i === n) continue;
          if (d === 0x22) {
            i++;
            if (this.stringIsKey) {
              if (this.inKey) this.keyEnded(chunk, offset + i);
              state = S_COLON;
            } else {
              state = S_AFTER;
              if (this.depth === 1 && !this.memberDone(offset + i)) return false;
            }
          } else if (d === 0x5c) {
            if (this.inKey) this.keyEscaped = true;
            i++;
            state = S_ESCAPE;
          } else {
            return this.fail('not_json'); // a raw control character
          }
          continue;
        }
        case S_ESCAPE:
          if (c === 0x75 /* u */) {
            this.hexLeft = 4;
            state = S_HEX;
          } else if (c === 0x22 || c === 0x5c || c === 0x2f || c === 0x62 || c === 0x66 || c === 0x6e || c === 0x72 || c === 0x74) {
            state = S_STRING;
          } else {
            return this.fail('not_json');
          }
          i++;
          continue;
        case S_HEX:
          if (!isHex(c)) return this.fail('not_json');
          i++;
          if (--this.hexLeft === 0) state = S_STRING;
          continue;
        case S_AFTER:
          if (isWhitespace(c)) break;
          if (c === 0x2c /* , */) {
            state = this.stack[this.depth] === OBJECT ? S_OBJ_KEY : S_VALUE;
            break;
          }
          if (c === 0x7d /* } */ ? this.stack[this.depth] !== OBJECT : c !== 0x5d /* ] */ || this.stack[this.depth] !== ARRAY) {
            return this.fail('not_json');
          }
          state = this.close(offset + i + 1);
          if (state === S_FAILED) return false;
          break;
        case S_VALUE:
        case S_ARR_FIRST:
          if (isWhitespace(c)) break;
          if (state === S_ARR_FIRST && c === 0x5d /* ] */) {
            state = this.close(offset + i + 1);
            if (state === S_FAILED) return false;
            break;
          }
          if (this.depth === 1) this.valueStart = offset + i;
          if (c === 0x22) {
            this.stringIsKey = false;
            state = S_STRING;
          } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
            if (this.depth === this.maxDepth) return this.fail('too_deep');
            this.stack[++this.depth] = c === 0x7b ? OBJECT : ARRAY;
            state = c === 0x7b ? S_OBJ_FIRST : S_ARR_FIRST;
          } else if (c === 0x2d /* - */) {
            state = S_NUM_MINUS;
          } else if (c === 0x30) {
            state = S_NUM_ZERO;
          } else if (c > 0x30 && c <= 0x39) {
            state = S_NUM_INT;
          } else if (c === 0x74 /* t */ || c === 0x66 /* f */ || c === 0x6e /* n */) {
            this.literal = c === 0x74 ? TRUE : c === 0x66 ? FALSE : NULL;
            this.literalAt = 1;
            state = S_LITERAL;
          } else {
            return this.fail('not_json');
          }
          break;
        case S_OBJ_FIRST:
        case S_OBJ_KEY:
          if (isWhitespace(c)) break;
          if (c === 0x22) {
            this.stringIsKey = true;
            if (this.depth === 1) {
              this.keyStart = offset + i;
              this.inKey = true;
              this.keyEscaped = false;
            }
            state = S_STRING;
          } else if (c === 0x7d /* } */ && state === S_OBJ_FIRST) {
            state = this.close(offset + i + 1);
            if (state === S_FAILED) return false;
          } else {
            return this.fail('not_json');
          }
          break;
        case S_COLON:
          if (isWhitespace(c)) break;
          if (c !== 0x3a /* : */) return this.fail('not_json');
          state = S_VALUE;
          break;
        case S_LITERAL:
          if (c !== this.literal[this.literalAt]) return this.fail('not_json');
          if (++this.literalAt === this.literal.length) {
            state = S_AFTER;
            if (this.depth === 1 && !this.memberDone(offset + i + 1)) return false;
          }
          break;
        case S_NUM_MINUS:
          if (c === 0x30) state = S_NUM_ZERO;
          else if (c > 0x30 && c <= 0x39) state = S_NUM_INT;
          else return this.fail('not_json');
          break;
        case S_NUM_INT:
        case S_NUM_ZERO:
          if (state === S_NUM_INT && isDigit(c)) break;
          if (c === 0x2e /* . */) state = S_NUM_DOT;
          else if (c === 0x65 || c === 0x45 /* e E */) state = S_NUM_E;
          else {
            state = this.numberDone(offset + i);
            if (state === S_FAILED) return false;
            continue; // the byte after a number is read again as what follows a value
          }
          break;
        case S_NUM_DOT:
          if (!isDigit(c)) return this.fail('not_json');
          state = S_NUM_FRAC;
          break;
        case S_NUM_FRAC:
          if (isDigit(c)) break;
          if (c === 0x65 || c === 0x45) {
            state = S_NUM_E;
            break;
          }
          state = this.numberDone(offset + i);
          if (state === S_FAILED) return false;
          continue;
        case S_NUM_E:
          if (c === 0x2b || c === 0x2d /* + - */) state = S_NUM_ESIGN;
          else if (isDigit(c)) state = S_NUM_EXP;
          else return this.fail('not_json');
          break;
        case S_NUM_ESIGN:
          if (!isDigit(c)) return this.fail('not_json');
          state = S_NUM_EXP;
          break;
        case S_NUM_EXP:
          if (isDigit(c)) break;
          state = this.numberDone(offset + i);
          if (state === S_FAILED) return false;
          continue;
        case S_START:
          if (isWhitespace(c)) break;
          if (c !== 0x7b /* { */) return this.fail(c === 0x5b || c === 0x22 || c === 0x2d || isDigit(c) || c === 0x74 || c === 0x66 || c === 0x6e ? 'not_an_object' : 'not_json');
          this.depth = 1;
          this.stack[1] = OBJECT;
          state = S_OBJ_FIRST;
          break;
        case S_END:
          if (!isWhitespace(c)) return this.fail('not_json');
          break;
        default:
          return false;
      }
      i++;
    }
    this.state = state;
    // A top-level key cut by the chunk's end: keep its start, enough to recognise it.
    if (this.inKey) this.keepKeyStart(chunk, offset);
    return true;
  }

  /** The body is complete: true when it was one JSON object within the limits. */
  end(): boolean {
    if (this.state === S_FAILED) return false;
    if (this.state !== S_END) {
      this.fail('not_json');
      return false;
    }
    return true;
  }

  private fail(why: ScanFailure): false {
    this.failure = why;
    this.state = S_FAILED;
    return false;
  }

  /** A closer at `end`: the state after it, or S_FAILED. */
  private close(end: number): number {
    if (--this.depth === 0) return S_END;
    if (this.depth === 1 && !this.memberDone(end)) return S_FAILED;
    return S_AFTER;
  }

  /** A number ended just before `end`: the state after it, or S_FAILED. */
  private numberDone(end: number): number {
    if (this.depth === 1 && !this.memberDone(end)) return S_FAILED;
    return S_AFTER;
  }

  /** Keeps the part of the current top-level key that is in `chunk`, while it could be a name we look for. */
  private keepKeyStart(chunk: Buffer, offset: number): void {
    const from = Math.max(this.keyStart - offset, 0);
    const kept = this.carry?.length ?? 0;
    if (kept + chunk.length - from > MAX_NAME_BYTES) {
      this.carry = TOO_LONG;
    } else if (this.carry !== TOO_LONG) {
      const part = chunk.subarray(from);
      this.carry = this.carry === null ? Buffer.from(part) : Buffer.concat([this.carry, part]);
    }
  }

  /** A top-level key ended just before `keyEnd` (its closing quote is the byte before it). */
  private keyEnded(chunk: Buffer, keyEnd: number): void {
    this.inKey = false;
    this.keyEnd = keyEnd;
    this.keyName = OTHER;
    const carry = this.carry;
    this.carry = null;
    const length = keyEnd - this.keyStart;
    if (length > MAX_NAME_BYTES) return;
    const end = keyEnd - this.offset + chunk.length; // the key's end within `chunk`
    if (carry === TOO_LONG) return;
    if (carry === null && !this.keyEscaped) {
      // The common case, compared in place: "model" and "stream" with their quotes.
      if (length === 7 && bytesAt(chunk, end - 7, MODEL_KEY)) this.keyName = MODEL;
      else if (length === 8 && bytesAt(chunk, end - 8, STREAM_KEY)) this.keyName = STREAM;
      return;
    }
    const raw = carry === null ? chunk.subarray(end - length, end) : Buffer.concat([carry, chunk.subarray(0, end)]);
    for (const c of raw) if (c >= 0x80) return; // a raw non-ASCII byte is in neither name
    const name = JSON.parse(raw.toString('latin1')) as string;
    this.keyName = name === 'model' ? MODEL : name === 'stream' ? STREAM : OTHER;
  }

  /** A top-level member ended at `valueEnd`: index it; false (failed) past the limits. */
  private memberDone(valueEnd: number): boolean {
    const members = this.members;
    if (members.length === MAX_MEMBERS) return this.fail('too_many_members');
    members.push({ keyStart: this.keyStart, keyEnd: this.keyEnd, valueStart: this.valueStart, valueEnd });
    if (this.keyName === MODEL) {
      if (this.modelIndex !== -1) return this.fail('duplicate_model');
      this.modelIndex = members.length - 1;
    } else if (this.keyName === STREAM) {
      this.streamIndex = members.length - 1;
    }
    return true;
  }
}
