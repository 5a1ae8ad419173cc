/**
 * A usage object read against its format's schema (formats/usage-read.ts), unit by unit: totals,
 * addends and parts; what an absent, unreadable or inconsistent count means for the counts kept
 * and for the marker recorded; a call reported in passes.
 */
import t from 'tap';
import { FORMATS } from '../src/formats/index.js';
import { readUsage } from '../src/formats/usage-read.js';

const chat = FORMATS.chat.usage;
const messages = FORMATS.messages.usage;

/** The counts of a usage as one object, for comparison. */
function counts(u: ReturnType<typeof readUsage>['usage']): Record<string, number> {
  const { input, cachedInput, cacheWrite, cacheWrite1h, audioInput, imageInput, output, reasoning, audioOutput, imageOutput } = u;
  return { input, cachedInput, cacheWrite, cacheWrite1h, audioInput, imageInput, output, reasoning, audioOutput, imageOutput };
}
const ZERO = { input: 0, cachedInput: 0, cacheWrite: 0, cacheWrite1h: 0, audioInput: 0, imageInput: 0, output: 0, reasoning: 0, audioOutput: 0, imageOutput: 0 };

t.test('totals and parts, each where its path says', async (t) => {
  const r = readUsage({ prompt_tokens: 100, completion_tokens: 40, prompt_tokens_details: { cached_tokens: 30, cache_write_tokens: 20, audio_tokens: 5, image_tokens: 4 }, completion_tokens_details: { reasoning_tokens: 10, audio_tokens: 3, image_tokens: 2 } }, chat);
  t.equal(r.problem, null);
  t.same(r.known, { input: true, output: true });
  t.same(counts(r.usage), { ...ZERO, input: 100, cachedInput: 30, cacheWrite: 20, audioInput: 5, imageInput: 4, output: 40, reasoning: 10, audioOutput: 3, imageOutput: 2 });
});

t.test('an absent part is 0; an absent total leaves its side unknown, the other side read', async (t) => {
  const r = readUsage({ completion_tokens: 40, prompt_tokens_details: { cached_tokens: 30 } }, chat);
  t.equal(r.problem, 'usage_field_missing:prompt_tokens');
  t.same(r.known, { input: false, output: true });
  t.equal(r.usage.output, 40);
  t.equal(r.usage.reasoning, 0);
});

t.test('an unreadable part counts as its whole, or 0 when it is a discount', async (t) => {
  const audio = readUsage({ prompt_tokens: 100, completion_tokens: 40, prompt_tokens_details: { audio_tokens: '5' } }, chat);
  t.equal(audio.problem, 'usage_field_invalid:prompt_tokens_details.audio_tokens');
  t.same(audio.known, { input: true, output: true }, 'the totals are still known');
  t.equal(audio.usage.audioInput, 100, 'every input token taken for audio');
  const cached = readUsage({ prompt_tokens: 100, completion_tokens: 40, prompt_tokens_details: { cached_tokens: -1 } }, chat);
  t.equal(cached.problem, 'usage_field_invalid:prompt_tokens_details.cached_tokens');
  t.equal(cached.usage.cachedInput, 0, 'no input token taken for a cache read');
});

t.test('a part larger than its whole counts as its whole, or 0 when it is a discount', async (t) => {
  const r = readUsage({ prompt_tokens: 100, completion_tokens: 40, prompt_tokens_details: { cached_tokens: 150, image_tokens: 120 }, completion_tokens_details: { reasoning_tokens: 41 } }, chat);
  t.equal(r.problem, 'usage_inconsistent:prompt_tokens_details.cached_tokens', 'the first problem is the marker');
  t.same(counts(r.usage), { ...ZERO, input: 100, cachedInput: 0, imageInput: 100, output: 40, reasoning: 0 });
});

t.test('an unreadable total leaves its side unknown; counts read stay', async (t) => {
  const r = readUsage({ prompt_tokens: 1.5, completion_tokens: 40 }, chat);
  t.equal(r.problem, 'usage_field_invalid:prompt_tokens');
  t.same(r.known, { input: false, output: true });
  t.equal(r.usage.output, 40);
});

t.test('addends add to the total and to their own kind (Messages)', async (t) => {
  const r = readUsage({ input_tokens: 10, cache_read_input_tokens: 200, cache_creation_input_tokens: 50, cache_creation: { ephemeral_1h_input_tokens: 30 }, output_tokens: 7, output_tokens_details: { thinking_tokens: 3 } }, messages);
  t.equal(r.problem, null);
  t.same(counts(r.usage), { ...ZERO, input: 260, cachedInput: 200, cacheWrite: 50, cacheWrite1h: 30, output: 7, reasoning: 3 });
  const over = readUsage({ input_tokens: 10, cache_creation_input_tokens: 50, cache_creation: { ephemeral_1h_input_tokens: 80 }, output_tokens: 7 }, messages);
  t.equal(over.problem, 'usage_inconsistent:cache_creation.ephemeral_1h_input_tokens');
  t.equal(over.usage.cacheWrite1h, 50, 'every cache write taken for a 1-hour one');
});

t.test('a call in passes: its counts are the sums of the passes, each read on its own', async (t) => {
  const r = readUsage({ input_tokens: 5, output_tokens: 2, iterations: [{ input_tokens: 10, output_tokens: 3 }, { input_tokens: 20, cache_read_input_tokens: 4, output_tokens: 6 }] }, messages);
  t.equal(r.problem, null);
  t.same(counts(r.usage), { ...ZERO, input: 34, cachedInput: 4, output: 9 });
  t.same(r.usage.parts?.map(counts), [{ ...ZERO, input: 10, output: 3 }, { ...ZERO, input: 24, cachedInput: 4, output: 6 }]);
  const bad = readUsage({ input_tokens: 5, output_tokens: 2, iterations: [{ input_tokens: 10, output_tokens: 'x' }] }, messages);
  t.equal(bad.problem, 'usage_field_invalid:iterations.output_tokens', 'a pass\'s marker names where it sits');
});
