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

  /** The bytes to send now for this chunk, or undefined when there is nothing yet. */
  filter(chunk: Buffer): Buffer | undefined {
    const buf = this.pending === null ? chunk : Buffer.concat([this.pending, chunk]);
    this.pending = null;
    const cut = lastEventEnd(buf);
    if (cut === 0) {
      this.pending = buf;
      return undefined;
    }
    if (cut < buf.length) this.pending = buf.subarray(cut);
    const complete = cut === buf.length ? buf : buf.subarray(0, cut);
    return dropUsageOnlyEvents(complete);
  }

  /** Whatever is left when the provider's body ends (an unterminated last event). */
  end(): Buffer | undefined {
    const rest = this.pending;
    this.pending = null;
    return rest === null ? undefined : dropUsageOnlyEvents(rest);
  }
}

/** Index just past the last blank line (event separator), or 0 when there is none. */
function lastEventEnd(buf: Buffer): number {
  const lf = buf.lastIndexOf('\n\n');
  const crlf = buf.lastIndexOf('\r\n\r\n');
  return Math.max(lf === -1 ? 0 : lf + 2, crlf === -1 ? 0 : crlf + 4);
}

const EMPTY_CHOICES = /"choices"\s*:\s*\[\s*\]/;

function dropUsageOnlyEvents(complete: Buffer): Buffer | undefined {
  // latin1 maps each byte to one character, so string indices are byte offsets.
  const text = complete.toString('latin1');
  if (!EMPTY_CHOICES.test(text)) return complete;
  const kept: Buffer[] = [];
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n\n', start);
    end = end === -1 ? text.length : end + 2;
    const event = text.slice(start, end);
    if (!isUsageOnly(event)) kept.push(complete.subarray(start, end));
    start = end;
  }
  return kept.length === 0 ? undefined : Buffer.concat(kept);
}

function isUsageOnly(event: string): boolean {
  if (!EMPTY_CHOICES.test(event)) return false;
  const data = event.replace(/\r/g, '').split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(l[5] === ' ' ? 6 : 5)).join('\n');
  try {
    const chunk = JSON.parse(Buffer.from(data, 'latin1').toString('utf8')) as { choices?: unknown; usage?: unknown };
    return Array.isArray(chunk.choices) && chunk.choices.length === 0 && typeof chunk.usage === 'object' && chunk.usage !== null;
  } catch {
    return false;
  }
}
