import type { EventSourceMessage } from 'eventsource-parser';
import type { Endpoint } from '../config/types.js';

/** Token counts normalised across formats. `input` counts every input token, cached reads and cache writes included. */
export interface Usage {
  input: number;
  cachedInput: number;
  cacheWrite: number;
  /** Every output token, reasoning included. */
  output: number;
  /** Of `output`, how many were reasoning (kept for the record; already in `output`). */
  reasoning: number;
}

/** What a stream has told the tap so far. */
export interface StreamState {
  usage: Usage | undefined;
  /** Set when the provider reported an error inside the stream: the marker for the usage record. */
  failure: string | null;
}

/**
 * One wire format as data: where usage sits in a plain response and which stream events carry
 * it. The pipeline never branches on the format anywhere else.
 */
export interface FormatAdapter {
  endpoint: Endpoint;
  /** Usage from a parsed plain (non-streamed) response body. */
  usageOfBody(body: unknown): Usage | undefined;
  /** Reads one server-sent event; parses JSON only for the events that carry usage or errors. */
  onEvent(state: StreamState, event: EventSourceMessage): void;
}

/** A non-negative integer field, or 0. */
export function count(v: unknown): number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : 0;
}

export function isObject(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null;
}
