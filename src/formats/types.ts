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
  /**
   * The body's fields that cap a call's output tokens, any of which may be set (the largest
   * counts); when none is, the model's `maxOutputTokens` does.
   */
  outputCapFields: readonly string[];
  /** A field asking for several answers to one prompt (Chat Completions' `n`): the cap counts once per answer. */
  choicesField?: string;
  /** Usage from a parsed plain (non-streamed) response body. */
  usageOfBody(body: unknown): Usage | undefined;
  /** Reads one server-sent event; parses JSON only for the events that carry usage or errors. */
  onEvent(state: StreamState, event: EventSourceMessage): void;
  /**
   * The output text an event adds, or undefined. Used only to estimate output tokens when a
   * call ends without the provider's usage, so it is a cheap regex, not a JSON parse.
   */
  deltaText(event: EventSourceMessage): string | undefined;
  /**
   * For formats whose streams report usage only on request (Chat Completions): the body to send
   * instead so that the provider reports it, or undefined when the body already asks.
   */
  streamUsageRequest?(facts: { stream: boolean; body: Record<string, unknown> }, raw: Buffer): Buffer | undefined;
}

/** The decoded JSON string literal captured by `pattern`'s first group, or undefined. */
export function capturedString(data: string, pattern: RegExp): string | undefined {
  const m = pattern.exec(data);
  if (m === null) return undefined;
  try {
    return JSON.parse(`"${m[1]}"`) as string;
  } catch {
    return undefined;
  }
}

/** A non-negative integer field, or 0. */
export function count(v: unknown): number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : 0;
}

export function isObject(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null;
}
