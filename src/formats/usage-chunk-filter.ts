/**
 * Gives a client that never asked for stream usage the stream the provider sends such a client,
 * although the gateway asked for usage on its behalf (see chat.streamUsageRequest). Asking
 * changes two things in a Chat Completions stream, and both are undone here, byte for byte:
 * the usage-only chunk (`"choices":[]` with a `usage` object) is removed, and the
 * `"usage":null` member every other chunk then carries is cut out of it (with its comma),
 * leaving every other byte of the event as the provider sent it: nothing is re-serialised.
 *
 * Bytes pass through as they arrive up to the last complete event; only a trailing partial
 * event waits for its end, since an event must be seen whole to be recognised. Cutting the
 * member costs ≈ 2.5 µs per event against ≈ 0.55 µs for an event with nothing to change
 * (`node --import tsx bench/chunk-filter.ts`, this machine): strings are skipped with native
 * searches rather than read character by character, which measured 9–13 µs.
 */
export class UsageChunkFilter {
  private pending: Buffer | null = null;
  /** The last cut fell after a CR: an LF opening the next chunk completes that CRLF. */
  private cutAfterCR = false;
  /** Whether the last event cut off was the usage chunk (so that LF goes with it). */
  private lastDropped = false;

  /** The bytes to send now for this chunk, or undefined when there is nothing yet. */
  filter(chunk: Buffer): Buffer | undefined {
    if (this.cutAfterCR) {
      this.cutAfterCR = false;
      if (chunk[0] === LF && this.lastDropped) chunk = chunk.subarray(1);
    }
    const buf = this.pending === null ? chunk : Buffer.concat([this.pending, chunk]);
    this.pending = null;
    const cut = lastEventEnd(buf);
    if (cut === 0) {
      if (buf.length > 0) this.pending = buf;
      return undefined;
    }
    if (cut < buf.length) this.pending = buf.subarray(cut);
    else this.cutAfterCR = buf[cut - 1] === CR;
    return this.drop(cut === buf.length ? buf : buf.subarray(0, cut));
  }

  /** Whatever is left when the provider's body ends (an unterminated last event). */
  end(): Buffer | undefined {
    const rest = this.pending;
    this.pending = null;
    return rest === null ? undefined : this.drop(rest);
  }

  /** `complete` without its usage-only events and without the `"usage":null` members of the others. */
  private drop(complete: Buffer): Buffer | undefined {
    this.lastDropped = false;
    // latin1 maps each byte to one character, so string indices are byte offsets.
    const text = complete.toString('latin1');
    if (!text.includes('"usage"')) return complete;
    const kept: Buffer[] = [];
    // LF-only text (what providers send) is split with native searches; anything else byte by byte.
    const ends = text.includes('\r') || text.includes('\n\n\n') ? eventEnds(complete) : lfEventEnds(text);
    // An unterminated last event (only at the end of the body) is judged on its own.
    if (ends[ends.length - 1] !== complete.length) ends.push(complete.length);
    let start = 0;
    for (const end of ends) {
      const event = text.slice(start, end);
      const hasUsage = event.includes('"usage"');
      this.lastDropped = hasUsage && EMPTY_CHOICES.test(event) && isUsageOnly(event);
      if (!this.lastDropped) {
        const cuts = hasUsage ? nullUsageMembers(event) : NO_CUTS;
        let at = start;
        for (const [from, to] of cuts) {
          kept.push(complete.subarray(at, start + from));
          at = start + to;
        }
        kept.push(complete.subarray(at, end));
      }
      start = end;
    }
    return kept.length === 0 ? undefined : kept.length === 1 ? kept[0] : Buffer.concat(kept);
  }
}

const NO_CUTS: Array<[number, number]> = [];

/** Offsets just past every "\n\n" in a text with LF line endings and no run of three. */
function lfEventEnds(text: string): number[] {
  const ends: number[] = [];
  for (let at = text.indexOf('\n\n'); at !== -1; at = text.indexOf('\n\n', at + 2)) ends.push(at + 2);
  return ends;
}

/** The one `data:` line of an event: [start, end) offsets, or undefined when it has none or several. */
function dataLine(event: string): [number, number] | undefined {
  if (event.startsWith('data:')) {
    // The common shape: one data line, then only line terminators.
    const lf = event.indexOf('\n');
    const cr = event.indexOf('\r');
    const eol = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
    if (eol === -1) return [0, event.length];
    let rest = eol;
    while (rest < event.length && (event.charCodeAt(rest) === LF || event.charCodeAt(rest) === CR)) rest++;
    if (rest === event.length) return [0, eol];
  }
  let found: [number, number] | undefined;
  for (const m of event.matchAll(LINE)) {
    if (m[0].length === 0) break;
    if (!m[0].startsWith('data:')) continue;
    if (found !== undefined) return undefined;
    found = [m.index, m.index + m[0].replace(/[\r\n]+$/, '').length];
  }
  return found;
}
const LINE = /[^\r\n]*(?:\r\n|\r|\n|$)/g;

/**
 * The byte ranges to cut from one event so that its JSON loses its top-level `"usage": null`
 * member: from the comma before it (or, for a first member, to the comma and spaces after it).
 * Only an event whose JSON is on one `data:` line is touched (as every provider sends them).
 * Strings are skipped with native searches for their closing quote: this runs for every event
 * of every stream whose client did not ask for usage.
 */
function nullUsageMembers(event: string): Array<[number, number]> {
  const line = dataLine(event);
  if (line === undefined) return NO_CUTS;
  const lineEnd = line[1];
  let cuts: Array<[number, number]> | null = null;
  let depth = 0;
  let lastComma = -1;
  let expectKey = false;
  for (let i = line[0] + (event.charCodeAt(line[0] + 5) === 0x20 ? 6 : 5); i < lineEnd; i++) {
    const c = event.charCodeAt(i);
    if (c === 0x22 /* " */) {
      const open = i;
      i = closingQuote(event, i + 1);
      if (i === -1 || i >= lineEnd) return cuts ?? NO_CUTS;
      if (depth !== 1 || !expectKey) continue;
      expectKey = false;
      if (i - open !== 6 || !event.startsWith('usage', open + 1)) continue;
      NULL_VALUE.lastIndex = i + 1;
      const value = NULL_VALUE.exec(event);
      if (value === null) continue;
      const memberEnd = i + 1 + value[0].length;
      if (memberEnd > lineEnd) continue;
      cuts ??= [];
      if (lastComma !== -1) cuts.push([lastComma, memberEnd]);
      else {
        // The first member: take the comma (and the spaces) that follow it instead.
        FOLLOWING_COMMA.lastIndex = memberEnd;
        const comma = FOLLOWING_COMMA.exec(event);
        cuts.push([open, comma === null ? memberEnd : memberEnd + comma[0].length]);
      }
      i = memberEnd - 1;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      depth++;
      if (depth === 1 && c === 0x7b) {
        expectKey = true;
        lastComma = -1;
      }
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
    } else if (c === 0x2c /* , */ && depth === 1) {
      expectKey = true;
      lastComma = i;
    }
  }
  return cuts ?? NO_CUTS;
}

/** Index of the quote that closes a JSON string whose content starts at `from`, or -1. */
function closingQuote(text: string, from: number): number {
  for (let q = text.indexOf('"', from); q !== -1; q = text.indexOf('"', q + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(q - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return q;
  }
  return -1;
}

/** `: null` after a key (the value must end there: `,` or `}` follows). */
const NULL_VALUE = /[ \t]*:[ \t]*null(?=[ \t]*[,}])/y;
const FOLLOWING_COMMA = /[ \t]*,[ \t]*/y;

const LF = 0x0a;
const CR = 0x0d;
const EMPTY_CHOICES = /"choices"\s*:\s*\[\s*\]/;

/**
 * Index just past the last blank line (event separator), or 0 when there is none. SSE lines end
 * with LF, CRLF or a lone CR; a CR at the very end of `buf` counts as a line end (its LF, if one
 * follows in the next chunk, is handled by the filter).
 */
function lastEventEnd(buf: Buffer): number {
  if (buf.indexOf(CR) === -1) {
    const lf = buf.lastIndexOf('\n\n');
    return lf === -1 ? 0 : lf + 2;
  }
  const ends = eventEnds(buf);
  return ends.length === 0 ? 0 : ends[ends.length - 1]!;
}

/** Offsets just past every blank line in `buf`, in order. */
function eventEnds(buf: Buffer): number[] {
  const ends: number[] = [];
  let lineStart = 0;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (c !== LF && c !== CR) continue;
    if (c === CR && buf[i + 1] === LF) i++;
    // The line just ended is empty: nothing before its terminator.
    if (buf[lineStart] === LF || buf[lineStart] === CR) ends.push(i + 1);
    lineStart = i + 1;
  }
  return ends;
}

function isUsageOnly(event: string): boolean {
  const data = event.split(/\r\n|\r|\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(l[5] === ' ' ? 6 : 5)).join('\n');
  try {
    const chunk = JSON.parse(Buffer.from(data, 'latin1').toString('utf8')) as { choices?: unknown; usage?: unknown };
    return Array.isArray(chunk.choices) && chunk.choices.length === 0 && typeof chunk.usage === 'object' && chunk.usage !== null;
  } catch {
    return false;
  }
}
