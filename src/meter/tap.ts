import { TextDecoder } from 'node:util';
import { createParser, type EventSourceParser } from 'eventsource-parser';
import type { FormatAdapter, StreamState, Usage } from '../formats/types.js';

/**
 * A passive tap on the provider's response: it sees the same chunks the client gets and never
 * delays, re-splits or re-encodes them.
 *
 * Streams are decoded with one TextDecoder in stream mode (so a multi-byte character split
 * across chunks is decoded once whole) and fed to eventsource-parser; the format adapter parses
 * only the events that carry usage. Plain JSON bodies are kept as chunk references and parsed
 * once at the end.
 */
export class UsageTap {
  private readonly state: StreamState = { usage: undefined, failure: null };
  private readonly decoder: TextDecoder | null;
  private readonly parser: EventSourceParser | null;
  private readonly chunks: Buffer[] | null;
  /** Bytes of response body seen: the basis for an estimate when usage never arrives. */
  bytesSeen = 0;

  constructor(private readonly format: FormatAdapter, readonly stream: boolean) {
    if (stream) {
      this.decoder = new TextDecoder('utf-8');
      const state = this.state;
      this.parser = createParser({ onEvent: (event) => format.onEvent(state, event) });
      this.chunks = null;
    } else {
      this.decoder = null;
      this.parser = null;
      this.chunks = [];
    }
  }

  write(chunk: Buffer): void {
    this.bytesSeen += chunk.length;
    if (this.parser !== null) this.parser.feed(this.decoder!.decode(chunk, { stream: true }));
    else this.chunks!.push(chunk);
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
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(this.chunks!).toString('utf8'));
    } catch {
      return;
    }
    this.state.usage = this.format.usageOfBody(body);
  }

  get usage(): Usage | undefined {
    return this.state.usage;
  }

  get failure(): string | null {
    return this.state.failure;
  }
}
