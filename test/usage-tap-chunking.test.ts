import t from 'tap';
import { FORMATS } from '../src/formats/index.js';
import { emptyUsage, type Usage } from '../src/formats/types.js';
import { UsageTap } from '../src/meter/tap.js';

/** A usage with these counts and zero for every other kind. */
function counts(c: Partial<Usage>): Usage {
  return { ...emptyUsage(), ...c };
}

// The tap must read the same usage however the provider's bytes are split into chunks: across
// an SSE event, inside a multi-byte character, one byte at a time, with CRLF line endings.

function feed(tap: UsageTap, bytes: Buffer, sizes: number[]): void {
  let at = 0;
  let i = 0;
  while (at < bytes.length) {
    const size = sizes[i++ % sizes.length]!;
    tap.write(bytes.subarray(at, at + size));
    at += size;
  }
  tap.end();
}

const messagesStream = [
  'event: message_start',
  'data: {"type":"message_start","message":{"id":"m","usage":{"input_tokens":21,"cache_creation_input_tokens":5,"cache_read_input_tokens":7,"output_tokens":1}}}',
  '',
  'event: content_block_delta',
  'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"héllo wörld ✓ 🎉"}}',
  '',
  'event: message_delta',
  'data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":42}}',
  '',
  'event: message_stop',
  'data: {"type":"message_stop"}',
  '',
  '',
].join('\n');

for (const sizes of [[1], [3, 7], [64], [100000]]) {
  for (const eol of ['\n', '\r\n']) {
    t.test(`messages stream in chunks of ${sizes.join('/')} with ${eol === '\n' ? 'LF' : 'CRLF'}`, async (t) => {
      const tap = new UsageTap(FORMATS.messages, true);
      feed(tap, Buffer.from(messagesStream.replaceAll('\n', eol)), sizes);
      t.same(tap.usage, counts({ input: 33, cachedInput: 7, cacheWrite: 5, output: 42, reasoning: 0 }));
      t.equal(tap.outputText, 'héllo wörld ✓ 🎉', 'multi-byte text decoded whole across chunk boundaries');
      t.equal(tap.failure, null);
    });
  }
}

t.test('chat plain body: usage read from the usage object, not from look-alikes in the content', async (t) => {
  const body = JSON.stringify({
    id: 'x', choices: [{ message: { content: 'the "usage": {"prompt_tokens": 999} text' } }],
    usage: { prompt_tokens: 12, completion_tokens: 34, prompt_tokens_details: { cached_tokens: 2 }, completion_tokens_details: { reasoning_tokens: 5 } },
  });
  for (const sizes of [[1], [5], [4096]]) {
    const tap = new UsageTap(FORMATS.chat, false);
    feed(tap, Buffer.from(body), sizes);
    t.same(tap.usage, counts({ input: 12, cachedInput: 2, cacheWrite: 0, output: 34, reasoning: 5 }));
  }
});

t.test('responses stream: usage from response.completed; response.failed is a failure', async (t) => {
  const done = 'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"abc"}\n\n' +
    'event: response.completed\ndata: {"type":"response.completed","response":{"usage":{"input_tokens":9,"input_tokens_details":{"cached_tokens":4},"output_tokens":6,"output_tokens_details":{"reasoning_tokens":2}}}}\n\n';
  const ok = new UsageTap(FORMATS.responses, true);
  feed(ok, Buffer.from(done), [11]);
  t.same(ok.usage, counts({ input: 9, cachedInput: 4, cacheWrite: 0, output: 6, reasoning: 2 }));
  t.equal(ok.outputText, 'abc');
  const failed = new UsageTap(FORMATS.responses, true);
  feed(failed, Buffer.from('event: response.failed\ndata: {"type":"response.failed","response":{"usage":{"input_tokens":9,"output_tokens":1}}}\n\n'), [13]);
  t.equal(failed.failure, 'upstream_response_failed');
});

t.test('a final event without its blank line still counts', async (t) => {
  const tap = new UsageTap(FORMATS.chat, true);
  feed(tap, Buffer.from('data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}'), [10]);
  t.same(tap.usage, counts({ input: 3, cachedInput: 0, cacheWrite: 0, output: 4, reasoning: 0 }));
});

/** The usage a Messages stream of just message_start and message_delta, with these usage objects, bills. */
function messagesUsage(startUsage: object, deltaUsage: object): unknown {
  const stream = [
    'event: message_start',
    `data: ${JSON.stringify({ type: 'message_start', message: { id: 'm', usage: startUsage } })}`,
    '',
    'event: message_delta',
    `data: ${JSON.stringify({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: deltaUsage })}`,
    '',
    '',
  ].join('\n');
  const tap = new UsageTap(FORMATS.messages, true);
  feed(tap, Buffer.from(stream), [100000]);
  return tap.usage;
}

t.test('messages: a message_delta that sends null for counts it does not restate keeps message_start\'s input', async (t) => {
  const usage = messagesUsage(
    { input_tokens: 1000, cache_creation_input_tokens: 0, cache_read_input_tokens: 5000, output_tokens: 1 },
    { input_tokens: null, cache_creation_input_tokens: null, cache_read_input_tokens: null, output_tokens: 200 },
  );
  t.same(usage, counts({ input: 6000, cachedInput: 5000, cacheWrite: 0, output: 200, reasoning: 0 }));
});

t.test('messages: a message_delta that restates input counts replaces them', async (t) => {
  const usage = messagesUsage(
    { input_tokens: 10, cache_read_input_tokens: 0, output_tokens: 1 },
    { input_tokens: 12, cache_read_input_tokens: 3, output_tokens: 9 },
  );
  t.same(usage, counts({ input: 15, cachedInput: 3, cacheWrite: 0, output: 9, reasoning: 0 }));
});

t.test('chat stream: the usage chunk is read whatever the JSON spacing', async (t) => {
  const stream = [
    'data: {"id": "x", "choices": [{"index": 0, "delta": {"content": "hi"}}], "usage": null}',
    '',
    'data: {"id": "x", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14}}',
    '',
    'data: [DONE]',
    '',
    '',
  ].join('\n');
  const tap = new UsageTap(FORMATS.chat, true);
  feed(tap, Buffer.from(stream), [5]);
  t.same(tap.usage, counts({ input: 10, cachedInput: 0, cacheWrite: 0, output: 4, reasoning: 0 }));
  t.equal(tap.outputText, 'hi', 'delta text found with spaces after the colon');
});

t.test('many events in one read: exactly the events with a sign of usage or an error reach onEvent, each once and whole', async (t) => {
  const seen: string[] = [];
  // The chat format, watched: every event the tap hands it is recorded.
  const watched = { ...FORMATS.chat, onEvent: (state: Parameters<typeof FORMATS.chat.onEvent>[0], event: Parameters<typeof FORMATS.chat.onEvent>[1]) => {
    seen.push(event.data);
    FORMATS.chat.onEvent(state, event);
  } };
  const delta = (i: number): string => `data: {"id":"x","choices":[{"index":0,"delta":{"content":"w${i}"}}],"usage":null}\n\n`;
  const usage = 'data: {"id":"x","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4,"total_tokens":14},"note":{"usage":{"again":1}}}\n\n';
  const failure = 'data: {"error":{"message":"overloaded"}}\n\n';
  const cases: Array<[string, string[], string[]]> = [
    // name, events in the stream, the data of the events onEvent must see
    ['the sign in the first event', [usage, delta(1), delta(2), 'data: [DONE]\n\n'], [usage]],
    ['the sign in the last event', [delta(1), delta(2), delta(3), usage], [usage]],
    ['two signs in one event, and one in another', [delta(1), usage, failure, delta(2), 'data: [DONE]\n\n'], [usage, failure]],
    ['only "usage":null', [delta(1), delta(2), delta(3), 'data: [DONE]\n\n'], []],
    ['extra blank lines between events', [delta(1), '\n', usage, '\n\n', delta(2)], [usage]],
  ];
  for (const [name, events, expected] of cases) {
    for (const sizes of [[100000], [7], [1]]) {
      seen.length = 0;
      const tap = new UsageTap(watched, true);
      feed(tap, Buffer.from(events.join('')), sizes);
      t.same(seen, expected.map((e) => e.slice('data: '.length, -2)), `${name}, chunks of ${sizes[0]}`);
      if (expected.includes(usage)) t.same(tap.usage, counts({ input: 10, cachedInput: 0, cacheWrite: 0, output: 4, reasoning: 0 }), `${name}: usage read`);
    }
  }
  // Every delta is still in the tail for an estimate: nothing was cut out of the stream.
  const tap = new UsageTap(watched, true);
  feed(tap, Buffer.from([delta(1), delta(2), delta(3)].join('')), [100000]);
  t.equal(tap.outputText, 'w1w2w3');
});

t.test('chat: the sign search finds what a plain search for each key finds', async (t) => {
  // The reference: every `"usage"` (its value not null) and every `"error"`, each found by indexOf.
  const reference = (bytes: Buffer, from: number): number => {
    const error = bytes.indexOf('"error"', from);
    for (let at = bytes.indexOf('"usage"', from); at !== -1; at = bytes.indexOf('"usage"', at + 1)) {
      if (error !== -1 && error < at) return error;
      let i = at + 7;
      while (bytes[i] === 0x20 || bytes[i] === 0x09) i++;
      if (bytes[i] !== 0x3a) {
        if (bytes[i] === 0x2c || bytes[i] === 0x7d || bytes[i] === 0x5d) continue;
        return at;
      }
      i++;
      while (bytes[i] === 0x20 || bytes[i] === 0x09) i++;
      if (bytes[i] !== 0x6e) return at;
    }
    return error;
  };
  // Bytes drawn mostly from the keys' own letters, so that near misses are everywhere; a fixed seed.
  const pieces = ['"', 'u', 's', 'a', 'g', 'e', 'r', 'o', ':', 'n', ' ', ',', '}', '{', 'x', '"usage"', '"error"', '"usage":null', '"usage": {', '"usag', 'rror"'];
  let seed = 20261127;
  const random = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  let mismatches = 0;
  for (let round = 0; round < 3000; round++) {
    let text = '';
    const parts = 1 + random(40);
    for (let i = 0; i < parts; i++) text += pieces[random(pieces.length)];
    const bytes = Buffer.from(text);
    for (const from of [0, random(bytes.length + 1)]) {
      if (FORMATS.chat.usageSignAt(bytes, from) !== reference(bytes, from)) mismatches++;
    }
  }
  t.equal(mismatches, 0, '3,000 random byte strings, two starting points each');
});
