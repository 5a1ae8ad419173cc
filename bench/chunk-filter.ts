/**
 * What giving a client that did not ask for stream usage the provider's unasked-for bytes costs
 * per event (src/formats/usage-chunk-filter.ts), beside the same chunks passed through a filter
 * that finds nothing to change, in alternating rounds of the same run.
 *
 *   node --import tsx bench/chunk-filter.ts
 */
import { UsageChunkFilter } from '../src/formats/usage-chunk-filter.js';

// An OpenAI chunk as it comes with include_usage: every one carries "usage":null.
const chunk = (i: number, usage: boolean): Buffer => Buffer.from(
  'data: {"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06",' +
  '"service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"content":"tok' + i + ' "},"logprobs":null,' +
  `"finish_reason":null}]${usage ? ',"usage":null' : ''},"obfuscation":"abc"}\n\n`);
const EVENTS = 100;
const asked = Array.from({ length: EVENTS }, (_, i) => chunk(i, true));
const plain = Array.from({ length: EVENTS }, (_, i) => chunk(i, false));

function nsPerEvent(events: Buffer[], streams: number): number {
  const t0 = process.hrtime.bigint();
  for (let s = 0; s < streams; s++) {
    const f = new UsageChunkFilter();
    for (const e of events) f.filter(e);
    f.end();
  }
  return Number(process.hrtime.bigint() - t0) / streams / EVENTS;
}

const rounds: Array<[number, number]> = [];
nsPerEvent(asked, 500);
nsPerEvent(plain, 500);
for (let r = 0; r < 5; r++) rounds.push([nsPerEvent(plain, 2000), nsPerEvent(asked, 2000)]);
const median = (xs: number[]): number => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log('ns per event, median of 5 alternating rounds');
console.log(`  nothing to change (no "usage" member):   ${median(rounds.map((r) => r[0])).toFixed(0)}`);
console.log(`  "usage":null cut out of every event:     ${median(rounds.map((r) => r[1])).toFixed(0)}`);
