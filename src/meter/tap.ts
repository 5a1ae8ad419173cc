import { TextDecoder } from 'node:util';
import { createParser, type EventSourceParser } from 'eventsource-parser';
import type { FormatAdapter, StreamState, Usage } from '../formats/types.js';

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
  private readonly state: StreamState = { usage: undefined, failure: null };
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

  constructor(private readonly format: FormatAdapter, readonly stream: boolean) {
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
    if (this.parser !== null) {
      const rest = this.decoder!.decode();
      if (rest) this.parser.feed(rest);
      // A final event without its blank line still counts (the provider closed right after it).
      this.parser.feed('\n\n');
      return;
    }
    const text = Buffer.concat(this.chunks).toString('utf8');
    // Every format puts `usage` after the content: read that one object instead of parsing the
    // whole body. An escaped quote cannot form `"usage":` inside a string value, so the last
    // match is the real key. A body too large to keep whole was cut to its tail anyway.
    const usage = lastUsageObject(text);
    this.state.usage = this.format.usageOfBody(usage !== undefined || this.truncated ? { usage } : parseJson(text));
  }

  get usage(): Usage | undefined {
    return this.state.usage;
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

/** The last `"usage": {…}` object in a JSON text, parsed; undefined when not found whole. */
function lastUsageObject(text: string): unknown {
  let at = text.lastIndexOf('"usage"');
  while (at !== -1) {
    let i = at + 7;
    while (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t') i++;
    if (text[i] === ':') {
      i++;
      while (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t') i++;
      if (text[i] === '{') return parseJson(text.slice(i, objectEnd(text, i)));
    }
    at = at === 0 ? -1 : text.lastIndexOf('"usage"', at - 1);
  }
  return undefined;
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
