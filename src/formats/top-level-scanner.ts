/**
 * An incremental JSON scanner for request bodies and for providers' plain answers, fed chunk by
 * chunk as the bytes arrive.
 *
 * It validates the whole text as JSON (the spec: a non-JSON body is 400 `model_required`) and
 * records where each member of the top-level object sits, without building any value: the
 * gateway needs `model` and `stream` on every call and other members only sometimes, and the
 * body is forwarded as the bytes received. A 30 MB body costs one pass over its bytes spread
 * over the chunks as they arrive (0.1–0.25 ms per 64 KiB chunk measured here), instead of one
 * `JSON.parse` of the whole text on a single turn of the event loop (bench/hostile-body.ts).
 *
 * Validity is JSON.parse's, checked byte by byte: the grammar of RFC 8259, no raw control
 * characters inside strings, and the bytes of a string passed through unchecked as UTF-8
 * (JSON.parse of the decoded text accepts every code point a decoder can produce). Limits make
 * hostile texts cheap to refuse at the byte where they are exceeded: nesting deeper than
 * `maxDepth`, more than `maxMembers` top-level members, and a second top-level member that the
 * vocabulary says is unique (a request's `model`).
 *
 * What it tells apart is its vocabulary's (see Vocabulary): the names of top-level members, names
 * flagged wherever they stand, and the `type` of the items of top-level arrays. Every key's name
 * is looked at once, when the key ends, lengths compared first; the bytes inside strings, where
 * most of a body is, are walked by the same tight loop whatever the vocabulary.
 */

/** Where one top-level member sits in the text: absolute byte offsets, ends exclusive. */
export interface MemberSpan {
  keyStart: number;
  keyEnd: number;
  valueStart: number;
  valueEnd: number;
  /** The member's name as its vocabulary numbers it (Vocabulary.code); 0 for any other name. */
  name: number;
}

/** Why a text was refused (for requests, all of them are `model_required` to the client). */
export type ScanFailure = 'not_json' | 'not_an_object' | 'too_deep' | 'too_many_members' | 'duplicate_model';

/**
 * Top-level members recorded at most in a request. Request bodies of the three formats have a
 * few dozen top-level fields; maps with arbitrary keys (metadata, logit_bias) are nested. The
 * bound keeps the member index small whatever a body holds.
 */
export const MAX_MEMBERS = 1024;

/** What a scan tells apart (built once, at start-up: see REQUEST_NAMES and tap.ts). */
export interface VocabularySpec {
  /** Top-level member names told apart (MemberSpan.name is the position here + 1). */
  members: readonly string[];
  /** A member name that may appear once at the top level: a second one fails the scan. */
  unique?: string;
  /** Names flagged wherever a key has them: the top-level member holding one is listed in `flagged`. */
  flagged?: readonly string[];
  /**
   * String values of the `type` member of an item (an object directly inside a top-level array:
   * `input[2]`, `output[0]`) that are told apart: each one found is listed in `items`.
   */
  itemTypes?: readonly string[];
  /**
   * Whether an item with an `id` that is either nothing but `id` and (or not) `type`, or has
   * neither a `type` nor a `role`, flags its top-level member: the shapes a provider may read as a
   * reference to a stored item (every item sent back in full names its type or its role).
   */
  idItems?: boolean;
}

/** What one name is to the scan. */
interface NameRole {
  /** Its code as a top-level member name, or 0. */
  member: number;
  flagged: boolean;
  /** Its role as a key of an item: ITEM_ID, ITEM_TYPE, ITEM_ROLE or 0 (another member). */
  item: number;
}

const ITEM_ID = 1;
const ITEM_TYPE = 2;
const ITEM_ROLE = 3;

/** Entries for names written without escapes, by their length in bytes with the quotes. */
type ByLength<T> = Array<Array<[Buffer, T]> | undefined>;

export class Vocabulary {
  readonly keys: ByLength<NameRole> = [];
  readonly keyNames = new Map<string, NameRole>();
  readonly types: ByLength<number> = [];
  readonly typeNames = new Map<string, number>();
  /** The longest a key or type value can be and still spell a name here: every character a \u escape, plus quotes. */
  readonly maxBytes: number;
  readonly unique: number;
  /** 1 at the length (quotes included) of each flagged name written without escapes: other keys below the top level are not looked up. */
  readonly flaggedLengths: Uint8Array;
  /** Whether items of top-level arrays are looked into. */
  readonly items: boolean;
  readonly idItems: boolean;

  constructor(readonly spec: VocabularySpec) {
    const role = (name: string): NameRole => {
      let r = this.keyNames.get(name);
      if (r === undefined) {
        this.keyNames.set(name, (r = { member: 0, flagged: false, item: 0 }));
        add(this.keys, name, r);
      }
      return r;
    };
    spec.members.forEach((name, i) => (role(name).member = i + 1));
    for (const name of spec.flagged ?? []) role(name).flagged = true;
    this.idItems = spec.idItems === true;
    const types = spec.itemTypes ?? [];
    this.items = this.idItems || types.length > 0;
    if (this.idItems) {
      role('id').item = ITEM_ID;
      role('role').item = ITEM_ROLE;
    }
    if (types.length > 0) role('type').item = ITEM_TYPE;
    types.forEach((value, i) => {
      this.typeNames.set(value, i + 1);
      add(this.types, value, i + 1);
    });
    const longest = Math.max(...[...this.keyNames.keys(), ...types].map((name) => name.length));
    this.maxBytes = 6 * longest + 2;
    this.flaggedLengths = new Uint8Array(this.maxBytes + 1);
    for (const name of spec.flagged ?? []) this.flaggedLengths[Buffer.byteLength(JSON.stringify(name))] = 1;
    this.unique = spec.unique === undefined ? 0 : this.code(spec.unique);
  }

  /** The code of a top-level member name (MemberSpan.name), 0 when it is not in the vocabulary. */
  code(name: string): number {
    return this.keyNames.get(name)?.member ?? 0;
  }
}

function add<T>(table: ByLength<T>, name: string, entry: T): void {
  const bytes = Buffer.from(JSON.stringify(name));
  (table[bytes.length] ??= []).push([bytes, entry]);
}

/**
 * Names that cannot go to a provider shared by every key: references to objects stored on its
 * account, and `background` (see formats/references.ts, which decides on the members flagged).
 */
export const REFERENCE_NAMES = [
  'file_id', 'file_ids', 'vector_store_ids', 'container', 'container_id', 'skill_id', 'tunnel_id', 'conversation', 'prompt',
  'background', 'audio', 'thread', 'previous_message_id',
] as const;

/** What a request body's scan tells apart: `model` (code 1), `stream` (code 2) and the references. */
export const REQUEST_NAMES = new Vocabulary({
  members: ['model', 'stream'],
  unique: 'model',
  flagged: REFERENCE_NAMES,
  itemTypes: ['item_reference'],
  idItems: true,
});
const MODEL = 1;
const STREAM = 2;
/** `carry` once the string is longer than any name looked for. */
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

/**
 * Bytes of a string looked at one by one before the rest of it is taken eight at a time: keys and
 * most values end sooner, and a short string is not worth a DataView.
 */
const SHORT_RUN = 32;

/**
 * From `i`, inside `chunk`'s string: the start of the first eight-byte group that holds a quote, a
 * backslash or a control character, or of the chunk's last eight bytes or fewer; plainBytesEnd
 * then finds which byte it is. A group is tested as two 32-bit words, with no branch per byte:
 * `(x - 0x01010101) & ~x & 0x80808080` is non-zero exactly when a byte of x is zero (x: the word
 * XORed with four quotes, or four backslashes), `(v - 0x20202020) & ~v & 0x80808080` exactly when
 * a byte of v is below 0x20 ("haszero" and "hasless" of Anderson's Bit Twiddling Hacks). A borrow
 * only marks bytes after one that truly matched, and ~v masks off every byte of 0x80 or more
 * (UTF-8), so a group is stopped at exactly when it holds such a byte. Measured on a 200 KB body
 * of text: about three times the byte loop's speed (bench/README.md, 2026-11-27, fourth).
 */
function plainWordsEnd(chunk: Buffer, i: number): number {
  const n = chunk.length;
  const view = new DataView(chunk.buffer, chunk.byteOffset, n);
  // `<`, not `<=`: at least one byte is left for the byte loop, so it never reads past the chunk.
  while (i + 8 < n) {
    const v = view.getInt32(i, true);
    const w = view.getInt32(i + 4, true);
    const vq = v ^ 0x22222222;
    const vb = v ^ 0x5c5c5c5c;
    const wq = w ^ 0x22222222;
    const wb = w ^ 0x5c5c5c5c;
    const marks = ((vq - 0x01010101) & ~vq) | ((vb - 0x01010101) & ~vb) | ((v - 0x20202020) & ~v)
      | ((wq - 0x01010101) & ~wq) | ((wb - 0x01010101) & ~wb) | ((w - 0x20202020) & ~w);
    if ((marks & 0x80808080) !== 0) return i;
    i += 8;
  }
  return i;
}

/** 1 for the bytes that end a string's plain run: a quote, a backslash, a control character. */
const ENDS_PLAIN_RUN = new Uint8Array(256);
for (let b = 0; b < 0x20; b++) ENDS_PLAIN_RUN[b] = 1;
ENDS_PLAIN_RUN[0x22] = ENDS_PLAIN_RUN[0x5c] = 1;

/** From `i`, inside a string: the index of its first quote, backslash or control character before `stop`, else `stop`. */
function plainBytesEnd(chunk: Buffer, i: number, stop: number): number {
  for (; i < stop; i++) if (ENDS_PLAIN_RUN[chunk[i]!] === 1) return i;
  return stop;
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66);
}

export class TopLevelScanner {
  /** Every top-level member in text order (duplicates included). */
  readonly members: MemberSpan[] = [];
  /**
   * The top-level members (indices in `members`, ascending, each once) in which, or as which, a
   * key with a flagged name stands, or an item that holds only `id` (and `type`); null for none.
   * An index may be that of the member still being read.
   */
  flagged: number[] | null = null;
  /** Pairs (index in `members` of the top-level array, code of the type) of the items whose `type` the vocabulary tells apart; null for none. */
  items: number[] | null = null;
  /** For each member code, the index in `members` of its last occurrence (JSON.parse keeps the last). */
  private readonly last: number[];
  /** Bit `code` set: that member occurs more than once. */
  repeated = 0;
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
  private memberKeyStart = 0;
  private memberKeyEnd = 0;
  private memberName = 0;
  private valueStart = 0;
  /** Whether a top-level member's value has begun and not ended. */
  private inValue = false;
  // The string whose bytes are being looked at (a key, or an item's `type` value), if any.
  private watching = false;
  private watchStart = 0;
  private escaped = false;
  /** The start of the watched string when it began in an earlier chunk (rare), or null. */
  private carry: Buffer | null = null;
  // The item being read (an object directly inside a top-level array), when the vocabulary looks into items.
  private inItem = false;
  private itemHasId = false;
  private itemHasOther = false;
  /** The item names its `type` or its `role`. */
  private itemIsNamed = false;
  /** The next value is an item's `type`. */
  private typeNext = false;

  constructor(
    private readonly maxDepth: number,
    private readonly vocabulary: Vocabulary = REQUEST_NAMES,
    private readonly maxMembers = MAX_MEMBERS,
  ) {
    // Filled by a loop: Array.prototype.fill is a call into V8's runtime, made for every scanner.
    const last = new Array<number>(vocabulary.spec.members.length + 1);
    for (let code = 0; code < last.length; code++) last[code] = -1;
    this.last = last;
  }

  /** Index in `members` of the one `model` member, or -1 (request vocabulary). */
  get modelIndex(): number {
    return this.last[MODEL]!;
  }

  /** Index in `members` of the last `stream` member, or -1 (request vocabulary). */
  get streamIndex(): number {
    return this.last[STREAM]!;
  }

  /** Index in `members` of the last member with this code, or -1. */
  lastOf(code: number): number {
    return this.last[code]!;
  }

  /** Bytes scanned so far. */
  get scanned(): number {
    return this.offset;
  }

  /** Where the value of the top-level member being read began; -1 between values. */
  get openStart(): number {
    return this.inValue ? this.valueStart : -1;
  }

  /** The name code of the top-level member whose value is being read (see openStart). */
  get openName(): number {
    return this.memberName;
  }

  /** Scans the next chunk. False once the text is known to be refused (then `failure` says why). */
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
          // The fast path: most of a body's bytes are inside strings. The first SHORT_RUN bytes
          // one by one (most strings end there); the rest of a longer one eight at a time, then
          // one by one to the byte that stopped the group.
          const stop = i + SHORT_RUN < n ? i + SHORT_RUN : n;
          i = plainBytesEnd(chunk, i, stop);
          if (i === stop && stop !== n) i = plainBytesEnd(chunk, plainWordsEnd(chunk, i), n);
          if (i === n) continue;
          const d = chunk[i]!;
          if (d === 0x22) {
            i++;
            if (this.stringIsKey) {
              this.keyEnded(chunk, offset + i);
              state = S_COLON;
              // Most keys are followed by their colon at once: taken here, not on a turn of the loop.
              if (i < n && chunk[i] === 0x3a /* : */) {
                i++;
                state = S_VALUE;
              }
            } else {
              state = S_AFTER;
              if (this.depth === 1) {
                if (!this.memberDone(offset + i)) return false;
              } else if (this.watching) this.typeEnded(chunk, offset + i);
            }
          } else if (d === 0x5c) {
            if (this.watching) this.escaped = true;
            i++;
            state = S_ESCAPE;
          } else {
            return this.fail('not_json'); // a raw control character
          }
          continue;
        }
        case S_AFTER:
          if (isWhitespace(c)) break;
          if (c === 0x2c /* , */) {
            if (this.stack[this.depth] !== OBJECT) {
              state = S_VALUE;
              break;
            }
            // A comma in an object is most often followed at once by the next key's quote.
            if (i + 1 < n && chunk[i + 1] === 0x22) {
              state = this.keyStarts(offset + i + 1);
              i += 2;
              continue;
            }
            state = S_OBJ_KEY;
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
          if (this.depth === 1) {
            this.valueStart = offset + i;
            this.inValue = true;
          } else if (this.typeNext) {
            // An item's `type`: its value is looked at when it is a string.
            this.typeNext = false;
            if (c === 0x22) this.watch(offset + i);
          }
          if (c === 0x22) {
            this.stringIsKey = false;
            state = S_STRING;
          } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
            if (this.depth === this.maxDepth) return this.fail('too_deep');
            this.stack[++this.depth] = c === 0x7b ? OBJECT : ARRAY;
            state = c === 0x7b ? S_OBJ_FIRST : S_ARR_FIRST;
            if (this.depth === 3 && c === 0x7b && this.stack[2] === ARRAY && this.vocabulary.items) {
              this.inItem = true;
              this.itemHasId = this.itemHasOther = this.itemIsNamed = false;
            }
          } else if (c === 0x2d /* - */) {
            state = S_NUM_MINUS;
          } else if (c === 0x30) {
            state = S_NUM_ZERO;
          } else if (c > 0x30 && c <= 0x39) {
            state = S_NUM_INT;
          } else if (c === 0x74 /* t */ || c === 0x66 /* f */ || c === 0x6e /* n */) {
            const literal = c === 0x74 ? TRUE : c === 0x66 ? FALSE : NULL;
            if (i + literal.length <= n && bytesAt(chunk, i, literal)) {
              // The whole literal is in this chunk: taken at once.
              i += literal.length;
              state = this.scalarDone(offset + i);
              if (state === S_FAILED) return false;
              continue;
            }
            this.literal = literal;
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
            state = this.keyStarts(offset + i);
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
            state = this.scalarDone(offset + i + 1);
            if (state === S_FAILED) return false;
          }
          break;
        case S_NUM_MINUS:
          if (c === 0x30) state = S_NUM_ZERO;
          else if (c > 0x30 && c <= 0x39) state = S_NUM_INT;
          else return this.fail('not_json');
          break;
        case S_NUM_INT:
        case S_NUM_ZERO:
          if (state === S_NUM_INT && isDigit(c)) {
            // A run of digits is taken in one go.
            do i++;
            while (i < n && isDigit(chunk[i]!));
            continue;
          }
          if (c === 0x2e /* . */) state = S_NUM_DOT;
          else if (c === 0x65 || c === 0x45 /* e E */) state = S_NUM_E;
          else {
            state = this.scalarDone(offset + i);
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
          state = this.scalarDone(offset + i);
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
          state = this.scalarDone(offset + i);
          if (state === S_FAILED) return false;
          continue;
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
    // A watched string cut by the chunk's end: keep its start, enough to recognise it.
    if (this.watching) this.keepWatchStart(chunk, offset);
    return true;
  }

  /** The text is complete: true when it was one JSON object within the limits. */
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
    if (this.depth === 3 && this.inItem) this.itemEnded();
    if (--this.depth === 0) return S_END;
    if (this.depth === 1 && !this.memberDone(end)) return S_FAILED;
    return S_AFTER;
  }

  /** A number or a literal ended just before `end`: the state after it, or S_FAILED. */
  private scalarDone(end: number): number {
    if (this.depth === 1 && !this.memberDone(end)) return S_FAILED;
    return S_AFTER;
  }

  /** A key begins at `start` (its opening quote): the state that reads it. */
  private keyStarts(start: number): number {
    this.stringIsKey = true;
    this.watch(start);
    return S_STRING;
  }

  /** A string whose bytes are looked at begins at `start` (its opening quote). */
  private watch(start: number): void {
    this.watching = true;
    this.watchStart = start;
    this.escaped = false;
  }

  /** Keeps the part of the watched string that is in `chunk`, while it could spell a name looked for. */
  private keepWatchStart(chunk: Buffer, offset: number): void {
    const from = Math.max(this.watchStart - offset, 0);
    const kept = this.carry?.length ?? 0;
    if (kept + chunk.length - from > this.vocabulary.maxBytes) {
      this.carry = TOO_LONG;
    } else if (this.carry !== TOO_LONG) {
      const part = chunk.subarray(from);
      this.carry = this.carry === null ? Buffer.from(part) : Buffer.concat([this.carry, part]);
    }
  }

  /**
   * The entry of `table` for the watched string that ended just before `end` (its closing quote
   * is the byte before it), or undefined. Written without escapes and within the chunk, it is
   * compared in place, lengths first; otherwise decoded (JSON.parse of a few bytes).
   */
  private watched<T>(chunk: Buffer, end: number, byLength: ByLength<T>, byName: Map<string, T>): T | undefined {
    this.watching = false;
    const carry = this.carry;
    this.carry = null;
    const length = end - this.watchStart;
    if (length > this.vocabulary.maxBytes || carry === TOO_LONG) return undefined;
    const at = end - this.offset + chunk.length; // the string's end within `chunk`
    if (carry === null && !this.escaped) {
      const entries = byLength[length];
      if (entries === undefined) return undefined;
      for (let k = 0; k < entries.length; k++) {
        const entry = entries[k]!;
        if (bytesAt(chunk, at - length, entry[0])) return entry[1];
      }
      return undefined;
    }
    const raw = carry === null ? chunk.subarray(at - length, at) : Buffer.concat([carry, chunk.subarray(0, at)]);
    for (const c of raw) if (c >= 0x80) return undefined; // a raw non-ASCII byte is in no name
    return byName.get(JSON.parse(raw.toString('latin1')) as string);
  }

  /** A key ended just before `keyEnd`. */
  private keyEnded(chunk: Buffer, keyEnd: number): void {
    const v = this.vocabulary;
    const depth = this.depth;
    const inItem = depth === 3 && this.inItem;
    // The common case below the top level, decided by the key's length alone.
    if (depth !== 1 && !inItem && this.carry === null && !this.escaped && v.flaggedLengths[keyEnd - this.watchStart] !== 1) {
      this.watching = false;
      return;
    }
    const role = this.watched(chunk, keyEnd, v.keys, v.keyNames);
    if (depth === 1) {
      this.memberKeyStart = this.watchStart;
      this.memberKeyEnd = keyEnd;
      this.memberName = role === undefined ? 0 : role.member;
    }
    if (role !== undefined && role.flagged) this.flag();
    if (inItem) {
      const item = role === undefined ? 0 : role.item;
      if (item === ITEM_ID) this.itemHasId = true;
      else if (item === ITEM_TYPE) this.typeNext = this.itemIsNamed = true;
      else {
        this.itemHasOther = true;
        if (item === ITEM_ROLE) this.itemIsNamed = true;
      }
    }
  }

  /** An item's `type` string ended just before `end`. */
  private typeEnded(chunk: Buffer, end: number): void {
    const v = this.vocabulary;
    const code = this.watched(chunk, end, v.types, v.typeNames);
    if (code === undefined) return;
    (this.items ??= []).push(this.members.length, code);
  }

  /** The item being read has ended: one of nothing but `id` (and `type`), or with an `id` and neither `type` nor `role`, flags its member. */
  private itemEnded(): void {
    this.inItem = false;
    if (this.vocabulary.idItems && this.itemHasId && (!this.itemHasOther || !this.itemIsNamed)) this.flag();
  }

  /** Lists the top-level member being read as flagged. */
  private flag(): void {
    const at = this.members.length;
    const flagged = this.flagged;
    if (flagged === null) this.flagged = [at];
    else if (flagged[flagged.length - 1] !== at) flagged.push(at);
  }

  /** A top-level member ended at `valueEnd`: index it; false (failed) past the limits. */
  private memberDone(valueEnd: number): boolean {
    const members = this.members;
    this.inValue = false;
    if (members.length === this.maxMembers) return this.fail('too_many_members');
    const name = this.memberName;
    members.push({ keyStart: this.memberKeyStart, keyEnd: this.memberKeyEnd, valueStart: this.valueStart, valueEnd, name });
    if (name !== 0) {
      if (this.last[name] !== -1) {
        if (name === this.vocabulary.unique) return this.fail('duplicate_model');
        this.repeated |= 1 << name;
      }
      this.last[name] = members.length - 1;
    }
    return true;
  }
}
