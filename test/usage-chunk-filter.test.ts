import t from 'tap';
import { UsageChunkFilter } from '../src/formats/usage-chunk-filter.js';

// The filter removes exactly the usage-only chunk of a Chat Completions stream, byte for byte,
// whatever the line endings (SSE allows LF, CRLF and a lone CR) and however the stream is split.

const events = [
  'data: {"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}',
  'data: {"id":"c","choices":[{"index":0,"delta":{"content":"héllo 🎉"}}]}',
  'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}',
  'USAGE',
  'data: [DONE]',
];
const usageCompact = 'data: {"id":"c","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}';
const usageSpaced = 'data: {"id": "c", "choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 7}}';

function run(bytes: Buffer, size: number): Buffer {
  const filter = new UsageChunkFilter();
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) {
    const piece = filter.filter(bytes.subarray(at, at + size));
    if (piece !== undefined) out.push(piece);
  }
  const rest = filter.end();
  if (rest !== undefined) out.push(rest);
  return Buffer.concat(out);
}

for (const [name, eol] of [['LF', '\n'], ['CRLF', '\r\n'], ['CR', '\r']] as const) {
  for (const [spacing, usage] of [['compact', usageCompact], ['spaced', usageSpaced]] as const) {
    t.test(`${name} line endings, ${spacing} JSON: exactly the usage event is removed, at every chunk size`, async (t) => {
      const all = events.map((e) => (e === 'USAGE' ? usage : e) + eol + eol).join('');
      const expected = events.filter((e) => e !== 'USAGE').map((e) => e + eol + eol).join('');
      for (const size of [1, 2, 3, 7, 64, all.length]) {
        t.equal(run(Buffer.from(all), size).toString('utf8'), expected, `chunks of ${size}`);
      }
    });
  }
}

t.test('with CR line endings an event is sent as soon as its blank line arrives', async (t) => {
  const filter = new UsageChunkFilter();
  const first = Buffer.from('data: {"choices":[{"delta":{"content":"a"}}]}\r\r');
  t.same(filter.filter(first), first, 'a complete event passes at once');
  t.equal(filter.filter(Buffer.from('data: {"choices":[{"delta":{"content":"b"}}]}\r')), undefined, 'an unfinished one waits');
  t.equal(filter.filter(Buffer.from('\r'))?.toString(), 'data: {"choices":[{"delta":{"content":"b"}}]}\r\r');
});

t.test('CRLF split between CR and LF right after the usage chunk: its LF goes with it', async (t) => {
  const before = 'data: {"choices":[{"delta":{"content":"a"}}]}\r\n\r\n';
  const bytes = Buffer.from(`${before}${usageCompact}\r\n\r\ndata: [DONE]\r\n\r\n`);
  const cr = bytes.indexOf('\r\n\r\ndata: [DONE]') + 3;
  const filter = new UsageChunkFilter();
  const out = [filter.filter(bytes.subarray(0, cr)), filter.filter(bytes.subarray(cr)), filter.end()].filter((b) => b !== undefined);
  t.equal(Buffer.concat(out).toString(), `${before}data: [DONE]\r\n\r\n`);
});

t.test('an event that only looks like the usage chunk is kept', async (t) => {
  const lookalike = 'data: {"choices":[{"index":0,"delta":{"content":"\\"choices\\": [], \\"usage\\": {}"}}]}\n\n';
  t.equal(run(Buffer.from(lookalike), 5).toString(), lookalike);
});

// With usage asked for, every other chunk carries a "usage":null member the provider leaves out
// for a client that did not ask: it is cut out with its comma, every other byte kept.
const withNull = [
  'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"usage":null}',
  'data: {"id":"c","choices":[{"index":0,"delta":{"content":"héllo \\"usage\\":null 🎉"}}],"usage":null,"obfuscation":"x1"}',
  'data: {"usage": null, "id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}',
  'data: {"id":"c","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":7}}',
  'data: [DONE]',
];
const withoutNull = [
  'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}',
  'data: {"id":"c","choices":[{"index":0,"delta":{"content":"héllo \\"usage\\":null 🎉"}}],"obfuscation":"x1"}',
  'data: {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}',
  'data: [DONE]',
];

for (const [name, eol] of [['LF', '\n'], ['CRLF', '\r\n'], ['CR', '\r']] as const) {
  t.test(`${name}: "usage":null members are cut out byte for byte, at every chunk size`, async (t) => {
    const all = Buffer.from(withNull.map((e) => e + eol + eol).join(''));
    const expected = withoutNull.map((e) => e + eol + eol).join('');
    for (let size = 1; size <= 64; size++) t.equal(run(all, size).toString('utf8'), expected, `chunks of ${size}`);
    t.equal(run(all, all.length).toString('utf8'), expected, 'one chunk');
  });
}

t.test('a nested "usage":null (not a member of the chunk itself) is kept', async (t) => {
  const nested = 'data: {"id":"c","choices":[{"index":0,"delta":{"usage":null}}]}\n\n';
  t.equal(run(Buffer.from(nested), 7).toString(), nested);
});
