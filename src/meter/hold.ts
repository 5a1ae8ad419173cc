import { MAX_OUTPUT_CAP } from '../config/load.js';
import type { Model } from '../config/types.js';
import type { RequestLevers } from '../formats/levers.js';
import type { FormatAdapter } from '../formats/types.js';
import type { Hold, HoldEitherWay, KeyMode } from '../domain/types.js';
import { holdRates } from './charge.js';

/** A request body's top-level members, each parsed only when read (formats/model.ts RequestFacts). */
export interface TopLevelFields {
  member(name: string): unknown;
}

/**
 * What a call holds against its account before it is forwarded: its worst case.
 *
 * - Input: the request body's size in bytes, counted as tokens (every tokenizer in use makes
 *   at least one byte of text per token), and never more than the model's context window (the
 *   provider accepts no more). Priced at the dearest input rate of the levers the request names
 *   (fresh, cached read, any cache write, at standard or long-context rates, times the named
 *   geography and the provider's region: charge.ts holdRates), since the gateway cannot know
 *   beforehand how the provider splits it.
 * - Output: the largest of the body's output caps (`max_tokens`, `max_completion_tokens`,
 *   `max_output_tokens`, by format), times Chat Completions' `n`; where the body sets none, the
 *   model's `maxOutputTokens`. At the dearest output rate of those levers.
 *
 * A token key holds input plus output tokens. So the hold covers the call's real cost except
 * for input the body does not carry as text (an image or a file fetched by URL, a stored
 * response continued), audio and image token rates, per-call tool fees, and levers only the
 * answer reveals (a project's default tier: billed as reported, see charge.ts costOf).
 *
 * Should the call's process die before the call is settled, it is charged its input estimate
 * instead: a quarter of the bounded input (≈ 4 bytes of text per token), at the input price.
 */
export function holdFor(format: FormatAdapter, model: Model, levers: RequestLevers, mode: KeyMode, body: TopLevelFields, bodyBytes: number, stream: boolean, at: number): Hold {
  return holdOf(format, model, levers, mode, inputCap(model, bodyBytes), outputCap(format, model, body), stream, at);
}

/**
 * The hold of a call computed before its key is known (its body came whole with its head), in
 * both units; the body's caps are read once for both.
 */
export function holdEitherWay(format: FormatAdapter, model: Model, levers: RequestLevers, body: TopLevelFields, bodyBytes: number, stream: boolean, at: number): HoldEitherWay {
  const input = inputCap(model, bodyBytes);
  const output = outputCap(format, model, body);
  return { credit: holdOf(format, model, levers, 'credit', input, output, stream, at), token: holdOf(format, model, levers, 'token', input, output, stream, at) };
}

/** The input a body can carry, in tokens: its bytes, never more than the model's context window. */
function inputCap(model: Model, bodyBytes: number): number {
  return model.contextWindow === null ? bodyBytes : Math.min(bodyBytes, model.contextWindow);
}

function holdOf(format: FormatAdapter, model: Model, levers: RequestLevers, mode: KeyMode, input: number, output: number, stream: boolean, at: number): Hold {
  const interruptedInputTokens = Math.ceil(input / 4);
  const credit = mode === 'credit';
  const p = model.price;
  const rates = credit ? holdRates(p, levers) : null;
  return {
    amount: rates !== null ? input * rates.input + output * rates.output : input + output,
    interruptedCharge: credit ? interruptedInputTokens * p.input : interruptedInputTokens,
    interruptedInputTokens,
    endpoint: format.endpoint,
    model: model.id,
    enabledByDefault: model.enabledByDefault,
    stream,
    at,
    previousResponses: null,
  };
}

export function outputCap(format: FormatAdapter, model: Model, body: TopLevelFields): number {
  let cap = 0;
  for (const field of format.outputCapFields) {
    const v = body.member(field);
    if (typeof v === 'number' && Number.isInteger(v) && v > cap) cap = v;
  }
  if (cap === 0) cap = model.maxOutputTokens;
  const choices = format.choicesField === undefined ? undefined : body.member(format.choicesField);
  if (typeof choices === 'number' && Number.isInteger(choices) && choices > 1) cap *= choices;
  return Math.min(cap, MAX_OUTPUT_CAP);
}
