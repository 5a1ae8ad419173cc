/**
 * The incremental scanner that reads request bodies: whatever the chunking, it accepts exactly
 * the bodies JSON.parse reads as one object (with `model` named at most once), finds the spans
 * of the top-level members, and refuses a body at the byte where it passes a limit.
 */
import t from 'tap';
import { RequestBody } from '../src/http/body.js';
import { requestFacts } from '../src/formats/model.js';
import { MAX_MEMBERS, TopLevelScanner } from '../src/formats/top-level-scanner.js';
import { prng } from './helpers/prng.js';


const random = prng(7);
const pick = <T>(items: readonly T[]): T => items[random(items.length)]!;

const KEYS = ['"model"', '"stream"', '"a"', '"messages"', '"m\\u006fdel"', '"\\u0073tream"', '"mod"', '"é"', '"stream_options"'];
function value(depth: number): string {
  switch (random(depth > 4 ? 5 : 8)) {
    case 0: return JSON.stringify(pick(['', 'gpt-4o-mini', 'é\n"\\', '\u0001', '\ud800', 'tab\there']));
    case 1: return String(pick([0, -1, 1.5, -0.25e10, 1e-7, 12345678901234567890, -0]));
    case 2: return pick(['true', 'false', 'null', '-0', '0.0e+1', '1E5']);
    case 3: return pick(['"\\u00e9"', '"\\/"', '"a\\nb"']);
    case 4: return ` ${pick(['1', '"x"', 'true'])}\n`;
    case 5: case 6: return `[${Array.from({ length: random(4) }, () => value(depth + 1)).join(',')}]`;
    default: return object(depth + 1);
  }
}
function object(depth: number): string {
  // Members after a comma with and without a space: the scanner takes a key right after its comma at once.
  return `{${Array.from({ length: random(5) }, () => `${pick(KEYS)}:${value(depth)}`).join(pick([',', ', ']))}}`;
}
const NOISE = ['{', '}', '[', ']', ',', ':', '"', '\\', 'u', '0', '1', 'e', '-', '+', '.', ' ', '\n', 't', 'x', '\u0000', '\u001f', 'é', '\ufeff'];
function mutate(text: string): string {
  for (let k = 1 + random(3); k > 0; k--) {
    const at = random(text.length + 1);
    const op = random(3);
    text = text.slice(0, at) + (op === 0 ? '' : pick(NOISE)) + text.slice(op === 1 ? at : at + 1);
  }
  return text;
}

/** Feeds `bytes` to a scanner in chunks cut at `cuts`; the scanner after end(), and its verdict. */
function scan(bytes: Buffer, cuts: number[], maxDepth = 64): { scanner: TopLevelScanner; ok: boolean; refusedAt: number } {
  const scanner = new TopLevelScanner(maxDepth);
  let from = 0;
  for (const to of [...cuts, bytes.length]) {
    if (!scanner.write(bytes.subarray(from, to))) return { scanner, ok: false, refusedAt: to };
    from = to;
  }
  return { scanner, ok: scanner.end(), refusedAt: -1 };
}

function randomCuts(length: number): number[] {
  const cuts: number[] = [];
  for (let at = random(8); at < length; at += 1 + random(12)) cuts.push(at);
  return cuts;
}

/** What the gateway must conclude, from JSON.parse: undefined when the body is refused. */
function expected(bytes: Buffer, scanner: TopLevelScanner): Record<string, unknown> | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  // JSON.parse keeps one of several `model` keys; the gateway refuses them all.
  const names = scanner.members.map((m) => JSON.parse(bytes.subarray(m.keyStart, m.keyEnd).toString('utf8')));
  if (names.filter((n) => n === 'model').length > 1) return undefined;
  return parsed as Record<string, unknown>;
}

t.test('agrees with JSON.parse on 20,000 seeded bodies, in seeded chunks', async (t) => {
  let accepted = 0;
  const disagreements: string[] = [];
  for (let i = 0; i < 20_000; i++) {
    let text = random(5) === 0 ? value(0) : object(0);
    if (random(2) === 0) text = mutate(text);
    const bytes = Buffer.from(text);
    const { scanner, ok } = scan(bytes, randomCuts(bytes.length));
    const want = expected(bytes, scanner);
    if (ok !== (want !== undefined)) {
      disagreements.push(`${JSON.stringify(text)}: scanner ${ok} (${scanner.failure}), JSON.parse ${want !== undefined}`);
      continue;
    }
    if (!ok) continue;
    accepted++;
    // The spans give back every member as JSON.parse reads it (the last of a repeated key wins).
    const rebuilt: Record<string, unknown> = {};
    for (const m of scanner.members) {
      rebuilt[JSON.parse(bytes.subarray(m.keyStart, m.keyEnd).toString('utf8'))] = JSON.parse(bytes.subarray(m.valueStart, m.valueEnd).toString('utf8'));
    }
    if (JSON.stringify(rebuilt) !== JSON.stringify(want)) disagreements.push(`${JSON.stringify(text)}: spans`);
    const names = scanner.members.map((m) => JSON.parse(bytes.subarray(m.keyStart, m.keyEnd).toString('utf8')));
    if (scanner.modelIndex !== names.indexOf('model') || scanner.streamIndex !== names.lastIndexOf('stream')) {
      disagreements.push(`${JSON.stringify(text)}: model/stream index`);
    }
  }
  t.same(disagreements.slice(0, 10), [], 'no disagreement');
  t.ok(accepted > 5_000, `both verdicts well represented (${accepted} accepted)`);
});

t.test('every cut of a body gives the same spans', async (t) => {
  const bodies = [
    '{"m\\u006fdel":"gpt-4o-mini","stream":true,"x":[1,{"model":2}],"n":-1.5e+3}',
    ' {"\\u0073\\u0074\\u0072\\u0065\\u0061\\u006d" : false , "model" : "a\\"b" , "é" : null }\n',
    '{"messages":[{"role":"user","content":"caf\\u00e9 \\ud83d\\ude00"}],"model":"m","stream":true}',
  ];
  for (const text of bodies) {
    const bytes = Buffer.from(text);
    const whole = scan(bytes, []);
    t.ok(whole.ok, `valid: ${text}`);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const split = scan(bytes, [cut]);
      if (!split.ok || JSON.stringify(split.scanner.members) !== JSON.stringify(whole.scanner.members) || split.scanner.modelIndex !== whole.scanner.modelIndex || split.scanner.streamIndex !== whole.scanner.streamIndex) {
        t.fail(`cut at ${cut} of ${text}`);
      }
    }
    const byteByByte = scan(bytes, Array.from({ length: bytes.length }, (_, i) => i));
    t.same(byteByByte.scanner.members, whole.scanner.members, 'one byte per chunk');
  }
});

t.test('long strings: a quote, a backslash or a control character at any byte, at any alignment and cut', async (t) => {
  // Strings longer than the scanner's byte-by-byte run are taken eight bytes at a time; every
  // byte that stops a string must still be found where it stands, whatever the chunk's offset
  // in its ArrayBuffer (the words are read unaligned) and wherever the chunk is cut.
  const plain = Buffer.from('Lorem ipsum é 中 dolor \u007f sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt');
  const stoppers: Array<[string, Buffer]> = [
    ['the closing quote', Buffer.from('"')],
    ['an escape', Buffer.from('\\n')],
    ['an escaped quote', Buffer.from('\\"')],
    ['an escaped backslash', Buffer.from('\\\\')],
    ['an escape JSON does not have', Buffer.from('\\x')],
    ['a \\u escape', Buffer.from('\\u00e9')],
    ['a raw control character', Buffer.from([0x01])],
    ['a raw 0x1f', Buffer.from([0x1f])],
    ['a raw tab', Buffer.from([0x09])],
    ['a lone byte 0xff', Buffer.from([0xff])],
  ];
  const disagreements: string[] = [];
  let accepted = 0;
  let refused = 0;
  for (const [what, stopper] of stoppers) {
    for (let at = 0; at <= plain.length; at++) {
      const text = Buffer.concat([Buffer.from('{"model":"m","x":"'), plain.subarray(0, at), stopper, plain.subarray(at), Buffer.from('","n":1}')]);
      for (let align = 0; align < 8; align++) {
        const room = Buffer.alloc(text.length + 8);
        text.copy(room, align);
        const bytes = room.subarray(align, align + text.length);
        const middle = 18 + Math.floor(at / 2);
        for (const cuts of [[], [18 + at], [18 + at + 1], [middle]]) {
          const { scanner, ok } = scan(bytes, cuts);
          const want = expected(bytes, scanner);
          if (ok !== (want !== undefined)) {
            disagreements.push(`${what} at ${at}, offset ${align}, cuts ${cuts}: scanner ${ok} (${scanner.failure}), JSON.parse ${want !== undefined}`);
            continue;
          }
          if (!ok) {
            refused++;
            continue;
          }
          accepted++;
          const spans = scanner.members.map((m) => bytes.subarray(m.valueStart, m.valueEnd).toString('utf8'));
          const whole = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
          if (spans.length !== 3 || JSON.parse(spans[1]!) !== whole.x || spans[2] !== '1') disagreements.push(`${what} at ${at}, offset ${align}, cuts ${cuts}: spans ${JSON.stringify(spans)}`);
        }
      }
    }
  }
  t.same(disagreements.slice(0, 10), [], 'no disagreement with JSON.parse, and the spans where they stand');
  t.ok(accepted > 0 && refused > 0, `both verdicts (${accepted} accepted, ${refused} refused)`);
});

t.test('limits: refused at the byte that passes them, not at the end', async (t) => {
  const depth = (n: number): Buffer => Buffer.from(`{"model":"m","a":${'['.repeat(n - 1)}${']'.repeat(n - 1)}}`);
  t.ok(scan(depth(64), []).ok, 'nesting at the limit (64, the top-level object included)');
  const deep = Buffer.concat([depth(65).subarray(0, 17 + 64), Buffer.alloc(1_000_000, '[')]);
  const tooDeep = scan(deep, [17 + 63, 17 + 64]);
  t.equal(tooDeep.scanner.failure, 'too_deep');
  t.equal(tooDeep.refusedAt, 17 + 64, 'refused in the chunk that opened one level too many');

  const wide = (n: number): Buffer => Buffer.from(`{"model":"m"${',"k":1'.repeat(n - 1)}}`);
  t.ok(scan(wide(MAX_MEMBERS), []).ok, `${MAX_MEMBERS} top-level members`);
  t.equal(scan(wide(MAX_MEMBERS + 1), []).scanner.failure, 'too_many_members');

  const twice = Buffer.from('{"model":"a","x":1,"mo\\u0064el":"b","rest":"' + 'x'.repeat(1000) + '"}');
  const dup = scan(twice, [24, 30, 40]);
  t.equal(dup.scanner.failure, 'duplicate_model');
  t.equal(dup.refusedAt, 40, 'refused as soon as the second model value ended, the escaped key cut across chunks');

  for (const bad of ['', '   ', '[]', '"x"', '{"model":"m"}x', '{"model":"m",}', '\ufeff{"model":"m"}', '{"model":"m"', "{'model':'m'}"]) {
    t.notOk(scan(Buffer.from(bad), []).ok, `refused: ${JSON.stringify(bad)}`);
  }
});

t.test('request facts: model, stream and other members read from the spans, the whole body only on demand', async (t) => {
  const text = '{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":false},"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}';
  const bytes = Buffer.from(text);
  const scanner = new TopLevelScanner(64);
  const chunks = [bytes.subarray(0, 30), bytes.subarray(30, 31), bytes.subarray(31)];
  for (const c of chunks) scanner.write(c);
  const facts = requestFacts(new RequestBody(chunks, bytes.length), scanner)!;
  t.equal(facts.model, 'gpt-4o-mini');
  t.equal(facts.stream, true);
  t.equal(facts.member('max_tokens'), 64);
  t.same(facts.member('stream_options'), { include_usage: false });
  t.equal(facts.member('absent'), undefined);
  t.same(facts.body, JSON.parse(text));

  const refusals = ['{"model":""}', '{"model":1}', '{"model":null}', `{"model":"${'m'.repeat(300)}"}`, '{"stream":true}'];
  for (const r of refusals) {
    const s = new TopLevelScanner(64);
    s.write(Buffer.from(r));
    t.equal(requestFacts(RequestBody.of(Buffer.from(r)), s), undefined, `no readable model: ${r.slice(0, 40)}`);
  }
  const streamFalse = '{"model":"m","stream":"true"}';
  const s = new TopLevelScanner(64);
  s.write(Buffer.from(streamFalse));
  t.equal(requestFacts(RequestBody.of(Buffer.from(streamFalse)), s)!.stream, false, 'only the literal true asks for a stream');
});

t.test('request body: splices share the bytes around them; searches see across chunks', async (t) => {
  const chunks = ['{"a":', '1,"b":[2', ',3]}'].map((c) => Buffer.from(c));
  const body = new RequestBody(chunks, 17);
  t.equal(body.text(), '{"a":1,"b":[2,3]}');
  t.equal(body.slice(4, 9).toString(), ':1,"b', 'a slice across chunks');
  t.equal(body.splice(1, 1, Buffer.from('"x":0,')).text(), '{"x":0,"a":1,"b":[2,3]}');
  t.equal(body.splice(11, 16, Buffer.from('null')).text(), '{"a":1,"b":null}');
  const replaced = body.splice(5, 6, Buffer.from('42'));
  t.same([replaced.text(), replaced.length], ['{"a":42,"b":[2,3]}', 18]);
  t.equal(body.indexOf(0x5b), 11);
  t.ok(body.includes(Buffer.from('a":1,"b":[2,3')), 'a byte string across three chunks is found');
  t.ok(body.includes(Buffer.from('":1')), 'and one across one chunk boundary');
  t.notOk(body.includes(Buffer.from('"c"')), 'and an absent one is not');
});
