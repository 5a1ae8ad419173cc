/**
 * Gives a client that never asked for stream usage the stream the provider sends such a client,
 * although the gateway asked for usage on its behalf (see chat.streamUsageRequest). Asking
 * changes two things in a Chat Completions stream, and both are undone here, byte for byte:
 * the usage-only chunk (`"choices":[]` with a `usage` object) is removed, and the
 * `"usage":null` member every other chunk then carries is cut out of it (with its comma),
 * leaving every other byte of the event as the provider sent it: nothing is re-serialised.
 *
 * Bytes pass through as they arrive up to the last complete event; only a trailing partial
 * event waits for its end, since an event must be seen whole to be recognised.
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
    const ends = eventEnds(complete);
    // An unterminated last event (only at the end of the body) is judged on its own.
    if (ends[ends.length - 1] !== complete.length) ends.push(complete.length);
    let start = 0;
    for (const end of ends) {
      const event = text.slice(start, end);
      this.lastDropped = EMPTY_CHOICES.test(event) && isUsageOnly(event);
      if (!this.lastDropped) {
        const cuts = event.includes('"usage"') ? nullUsageMembers(event) : NO_CUTS;
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

/**
 * The byte ranges to cut from one event so that its JSON loses its top-level `"usage": null`
 * member: from the comma before it (or, for a first member, to the comma and spaces after it).
 * Only an event whose JSON is on one `data:` line is touched (as every provider sends them).
 */
function nullUsageMembers(event: string): Array<[number, number]> {
  let line = '';
  let lineStart = -1;
  const LINE = /[^\r\n]*(?:\r\n|\r|\n|$)/g;
  for (const m of event.matchAll(LINE)) {
    if (m[0].length === 0) break;
    if (!m[0].startsWith('data:')) continue;
    if (lineStart !== -1) return NO_CUTS;
    lineStart = m.index;
    line = m[0].replace(/[\r\n]+$/, '');
  }
  if (lineStart === -1) return NO_CUTS;
  const json = line[5] === ' ' ? 6 : 5;
  const cuts: Array<[number, number]> = [];
  let depth = 0;
  let lastComma = -1;
  let expectKey = false;
  for (let i = json; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if (c === 0x22 /* " */) {
      const keyStart = i;
      for (i++; i < line.length; i++) {
        const d = line.charCodeAt(i);
        if (d === 0x5c /* \ */) i++;
        else if (d === 0x22) break;
      }
      if (depth === 1 && expectKey) {
        expectKey = false;
        if (line.slice(keyStart, i + 1) !== '"usage"') continue;
        const value = NULL_VALUE.exec(line.slice(i + 1));
        if (value === null) continue;
        const memberEnd = i + 1 + value[0].length;
        if (lastComma !== -1) cuts.push([lineStart + lastComma, lineStart + memberEnd]);
        else {
          // The first member: take the comma (and the spaces) that follow it instead.
          const after = FOLLOWING_COMMA.exec(line.slice(memberEnd));
          if (after === null) cuts.push([lineStart + keyStart, lineStart + memberEnd]);
          else cuts.push([lineStart + keyStart, lineStart + memberEnd + after[0].length]);
        }
        i = memberEnd - 1;
      }
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
  return cuts;
}

/** `: null` after a key (the value must end there: `,` or `}` follows). */
const NULL_VALUE = /^\s*:\s*null(?=\s*[,}])/;
const FOLLOWING_COMMA = /^\s*,\s*/;

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
