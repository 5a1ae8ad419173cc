import { MAX_INPUT_TOKENS, MAX_OUTPUT_CAP } from '../config/load.js';
import { emptyUsage, type Usage } from '../formats/types.js';
import type { Reading } from '../formats/usage-read.js';

/**
 * Estimates for calls whose usage cannot be read completely (the client left and the grace
 * period ran out, or the provider did not report it, or not readably). Tokens are counted with gpt-tokenizer's
 * o200k_base encoding (the current OpenAI encoding; for Claude models it is an approximation),
 * loaded only when an estimate is first needed. Records built from it say `estimated: true`.
 */
let counter: Promise<(text: string) => number> | undefined;

function tokenCounter(): Promise<(text: string) => number> {
  counter ??= import('gpt-tokenizer/encoding/o200k_base').then((m) => (text: string) => m.countTokens(text));
  return counter;
}

/** The prompt's text: every string in the request body except the model id. */
export function promptText(body: unknown): string {
  const parts: string[] = [];
  const walk = (v: unknown, key: string): void => {
    if (typeof v === 'string') {
      if (key !== 'model') parts.push(v);
    } else if (Array.isArray(v)) {
      for (const item of v) walk(item, key);
    } else if (typeof v === 'object' && v !== null) {
      for (const [k, item] of Object.entries(v)) walk(item, k);
    }
  };
  walk(body, '');
  return parts.join('\n');
}

/**
 * Completes a reading that could not be taken as it is. A side whose counts were read stays as
 * read; a side that could not be read is estimated, never below what was read of it: input
 * from the prompt's text, output from the text seen in a stream or, in a plain body (which
 * cannot be read before it is complete), a quarter of the bytes seen.
 */
export async function estimateUsage(
  reading: Reading | undefined,
  requestBody: unknown,
  output: { stream: boolean; text: string; chars: number; bytesSeen: number },
): Promise<Usage> {
  const count = await tokenCounter();
  const usage = reading?.usage ?? emptyUsage();
  const [readInput, readOutput] = [usage.input, usage.output];
  // An estimate is bounded as a reported count is (formats/usage-read.ts): a charge stays exact.
  if (reading?.known.input !== true) usage.input = Math.min(MAX_INPUT_TOKENS, Math.max(usage.input, count(promptText(requestBody))));
  if (reading?.known.output !== true) {
    // Only a sample of a long text is kept: scale its token count to the whole length.
    const sampled = output.text.length === 0 ? 0 : Math.ceil((count(output.text) * Math.max(output.chars, output.text.length)) / output.text.length);
    usage.output = Math.min(MAX_OUTPUT_CAP, Math.max(usage.output, output.stream ? sampled : Math.ceil(output.bytesSeen / 4)));
  }
  // Passes read (Messages' iterations) no longer add up to the call once a side is estimated
  // above them, and a call with passes is priced by its passes: it is priced on its totals instead.
  if (usage.parts !== null && (usage.input !== readInput || usage.output !== readOutput)) usage.parts = null;
  return usage;
}
