/**
 * The search a stream's tap runs on every read for the signs of usage and errors (Messages,
 * Responses): wherever it starts, it finds exactly the first place where any of its markers
 * starts, as a native search per marker would.
 */
import t from 'tap';
import { FORMATS } from '../src/formats/index.js';
import { MarkerSearch } from '../src/formats/types.js';
import { prng } from './helpers/prng.js';

const random = prng(11);
const pick = <T>(items: readonly T[]): T => items[random(items.length)]!;

/** What the search must answer: the first of each marker's own native search. */
function reference(bytes: Buffer, markers: readonly string[], from: number): number {
  let first = -1;
  for (const m of markers) {
    const at = bytes.indexOf(Buffer.from(m), from);
    if (at !== -1 && (first === -1 || at < first)) first = at;
  }
  return first;
}

/** The sets the formats search for, and sets that stress the skips: prefixes of each other, overlaps, one byte. */
const SETS: readonly (readonly string[])[] = [
  ['message_start', 'message_delta', 'event:error', 'event: error'],
  ['response.completed', 'response.incomplete', 'response.failed', 'event:error', 'event: error'],
  ['"usage"', '"error"'],
  ['error', 'errors', 'rror'],
  ['aab', 'ab', 'abab'],
  ['x'],
  ['abc', 'bcd', 'cde', 'dea'],
];

/** Text made of pieces of the markers (whole, cut short at either end) and other bytes. */
function text(markers: readonly string[]): Buffer {
  let s = '';
  for (let n = random(12); n > 0; n--) {
    const m = pick(markers);
    switch (random(5)) {
      case 0: s += m; break;
      case 1: s += m.slice(random(m.length)); break;
      case 2: s += m.slice(0, random(m.length)); break;
      case 3: s += pick(['"', ':', '\n\n', ' ', 'data: {"type":"', 'é', 'a', 'r', 'o', 'e']); break;
      default: s += 'abcdefghijklmnopqrstuvwxyz_."'.slice(random(20)).slice(0, 1 + random(6));
    }
  }
  return Buffer.from(s);
}

t.test('finds the first marker wherever it starts, as a native search per marker does', async (t) => {
  let found = 0;
  let cases = 0;
  let wrong = 0;
  for (let i = 0; i < 30_000; i++) {
    const markers = pick(SETS);
    const search = new MarkerSearch(markers);
    const bytes = text(markers);
    const from = random(bytes.length + 2);
    const want = reference(bytes, markers, from);
    const got = search.firstAt(bytes, from);
    cases++;
    if (want !== -1) found++;
    if (got !== want && wrong++ < 5) t.equal(got, want, `${JSON.stringify(markers)} in ${JSON.stringify(bytes.toString())} from ${from}`);
  }
  t.equal(wrong, 0, `all ${cases} searches answer as the native ones`);
  t.ok(found > cases / 3 && found < cases, `the cases hold a marker or not (${found} of ${cases} do)`);
});

t.test('edges: the first and last bytes, a text shorter than a marker, a start past the end', async (t) => {
  const search = new MarkerSearch(['message_start', 'message_delta', 'error']);
  t.equal(search.firstAt(Buffer.from('error'), 0), 0, 'a text that is one marker');
  t.equal(search.firstAt(Buffer.from('xx message_delta'), 0), 3, 'a marker that ends the text');
  t.equal(search.firstAt(Buffer.from('erro'), 0), -1, 'a text shorter than the shortest marker');
  t.equal(search.firstAt(Buffer.from('message_del'), 0), -1, 'a longer marker cut short by the end');
  t.equal(search.firstAt(Buffer.from('error error'), 1), 6, 'the first at or after the start given');
  t.equal(search.firstAt(Buffer.from('error'), 9), -1, 'a start past the end');
  t.equal(search.firstAt(Buffer.alloc(0), 0), -1, 'an empty text');
  t.throws(() => new MarkerSearch([]), /1 to 32 markers/, 'no marker');
  t.throws(() => new MarkerSearch(['a', '']), /markers of 1 to/, 'an empty marker');
});

t.test('the formats find the events that carry usage or an error, and pass the others', async (t) => {
  const messages = [
    'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":10,"output_tokens":1}}}\n\n',
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\n',
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}\n\n',
  ];
  const read = Buffer.from(messages.join(''));
  const first = FORMATS.messages.usageSignAt(read, 0);
  t.equal(first, read.indexOf('message_start'), 'Messages: message_start');
  const delta = read.indexOf('event: content_block_delta');
  t.equal(FORMATS.messages.usageSignAt(read, delta), read.indexOf('message_delta'), 'Messages: past a text delta, to message_delta');
  t.equal(FORMATS.messages.usageSignAt(Buffer.from(messages[1]!), 0), -1, 'Messages: a text delta alone holds no sign');
  const done = Buffer.from('event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"Hi"}\n\nevent: response.completed\ndata: {"type":"response.completed"}\n\n');
  t.equal(FORMATS.responses.usageSignAt(done, 0), done.indexOf('response.completed'), 'Responses: response.completed after a text delta');
  for (const format of ['messages', 'responses'] as const) {
    for (const line of ['event: error', 'event:error']) {
      const read = Buffer.from(`event: ping\ndata: {}\n\n${line}\ndata: {"type":"error"}\n\n`);
      t.equal(FORMATS[format].usageSignAt(read, 0), read.indexOf(line), `${format}: an error event written '${line}'`);
    }
  }
  const said = Buffer.from('event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"an error"}}\n\n');
  t.equal(FORMATS.messages.usageSignAt(said, 0), -1, 'Messages: the word error in a text delta is no sign');
});
