/**
 * Removes the Chat Completions usage-only chunk (`"choices":[]` with a `usage` object) from a
 * stream on its way to a client that never asked for usage (see chat.streamUsageRequest).
 *
 * Bytes pass through as they arrive up to the last complete event; only a trailing partial
 * event waits for its end, since an event must be seen whole to be recognised. Every other
 * event reaches the client exactly as the provider sent it.
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

  /** `complete` without its usage-only events. */
  private drop(complete: Buffer): Buffer | undefined {
    this.lastDropped = false;
    // latin1 maps each byte to one character, so string indices are byte offsets.
    const text = complete.toString('latin1');
    if (!EMPTY_CHOICES.test(text)) return complete;
    const kept: Buffer[] = [];
    const ends = eventEnds(complete);
    // An unterminated last event (only at the end of the body) is judged on its own.
    if (ends[ends.length - 1] !== complete.length) ends.push(complete.length);
    let start = 0;
    for (const end of ends) {
      this.lastDropped = isUsageOnly(text.slice(start, end));
      if (!this.lastDropped) kept.push(complete.subarray(start, end));
      start = end;
    }
    return kept.length === 0 ? undefined : Buffer.concat(kept);
  }
}

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
  if (!EMPTY_CHOICES.test(event)) return false;
  const data = event.split(/\r\n|\r|\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(l[5] === ' ' ? 6 : 5)).join('\n');
  try {
    const chunk = JSON.parse(Buffer.from(data, 'latin1').toString('utf8')) as { choices?: unknown; usage?: unknown };
    return Array.isArray(chunk.choices) && chunk.choices.length === 0 && typeof chunk.usage === 'object' && chunk.usage !== null;
  } catch {
    return false;
  }
}
