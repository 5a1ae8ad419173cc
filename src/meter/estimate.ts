import type { Usage } from '../formats/types.js';

/**
 * Estimates for calls that end without the provider's usage (the client left and the grace
 * period ran out, or the provider never reported it). Tokens are counted with gpt-tokenizer's
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
 * Input from the usage already reported (Messages streams report input first) or else from the
 * prompt's text. Output: in a stream, the tokens of the text seen so far; in a plain body (which
 * cannot be read before it is complete), a quarter of the bytes seen.
 */
export async function estimateUsage(
  seen: Usage | undefined,
  requestBody: unknown,
  output: { stream: boolean; text: string; chars: number; bytesSeen: number },
): Promise<Usage> {
  const count = await tokenCounter();
  const input = seen !== undefined && seen.input > 0 ? seen.input : count(promptText(requestBody));
  // Only a sample of a long text is kept: scale its token count to the whole length.
  const sampled = output.text.length === 0 ? 0 : Math.ceil((count(output.text) * Math.max(output.chars, output.text.length)) / output.text.length);
  const textOutput = output.stream ? sampled : Math.ceil(output.bytesSeen / 4);
  return {
    input,
    cachedInput: seen?.cachedInput ?? 0,
    cacheWrite: seen?.cacheWrite ?? 0,
    output: Math.max(seen?.output ?? 0, textOutput),
    reasoning: 0,
  };
}
