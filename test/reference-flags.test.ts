/**
 * The request scanner's flags, the prefilter of the check for references to objects on the
 * shared provider account: whatever the chunking and however key names are escaped, a top-level
 * member is flagged exactly when a key with one of REFERENCE_NAMES stands in it (or is it), when
 * it is an array holding an item of type `item_reference`, an item of nothing but `id` (and
 * `type`), or an item with an `id` and neither a `type` nor a `role`. Compared with the same rule
 * computed from JSON.parse over random bodies.
 */
import t from 'tap';
import { requestFacts } from '../src/formats/model.js';
import { REFERENCE_NAMES, TopLevelScanner } from '../src/formats/top-level-scanner.js';
import { RequestBody } from '../src/http/body.js';
import { prng } from './helpers/prng.js';

const random = prng(21);
const pick = <T>(items: readonly T[]): T => items[random(items.length)]!;

/** An object as a list of members, so that a key may be given twice. */
type Obj = { members: Array<[string, Value]> };
type Value = string | number | boolean | null | Value[] | Obj;

const KEYS = [...REFERENCE_NAMES, 'id', 'type', 'role', 'content', 'text', 'file', 'files', 'file_idx', 'prompt_cache_key', 'containers', 'é', 'model', 'input'];
const STRINGS = ['item_reference', 'message', 'file_id', 'item_referencex', 'x', '', 'é"\\'];

function value(depth: number): Value {
  switch (random(depth > 5 ? 4 : 9)) {
    case 0: return pick(STRINGS);
    case 1: return pick([0, -1.5, 1e3]);
    case 2: return pick([true, false]);
    case 3: return null;
    case 4: case 5: return Array.from({ length: random(4) }, () => value(depth + 1));
    case 6: return item(depth + 1);
    default: return object(depth + 1);
  }
}
function object(depth: number): Obj {
  return { members: Array.from({ length: random(4) }, () => [pick(KEYS), value(depth)] as [string, Value]) };
}
/** An object shaped like an input item (often a reference). */
function item(depth: number): Obj {
  const shapes: Array<Array<[string, Value]>> = [
    [['type', 'item_reference'], ['id', 'msg_1']],
    [['id', 'msg_1']],
    [['type', 'message'], ['id', 'msg_1']],
    [['id', 'msg_1'], ['id', 'msg_2']],
    [['type', 'message'], ['id', 'msg_1'], ['role', 'user']],
    [['type', 'item_reference'], ['id', 'msg_1'], ['status', 'x']],
    [['type', 'message'], ['role', 'user'], ['content', value(depth)]],
    [['id', 'msg_1'], ['status', 'completed']],
    [['id', 'msg_1'], ['role', 'assistant'], ['content', value(depth)]],
  ];
  return { members: pick(shapes) };
}

/** A key written with some of its characters as \u escapes. */
function keyText(name: string): string {
  if (random(3) !== 0) return JSON.stringify(name);
  return `"${[...name].map((c) => (random(2) === 0 ? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}` : c === '"' || c === '\\' ? `\\${c}` : c)).join('')}"`;
}
function write(v: Value): string {
  if (Array.isArray(v)) return `[${v.map(write).join(',')}]`;
  if (v !== null && typeof v === 'object') return `{${v.members.map(([k, x]) => `${keyText(k)}:${write(x)}`).join(random(2) === 0 ? ',' : ' ,\n ')}}`;
  if (typeof v === 'string' && random(4) === 0) return `"${[...v].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"`;
  return JSON.stringify(v);
}

/** The rule, from the values themselves. */
function holdsName(v: Value): boolean {
  if (Array.isArray(v)) return v.some(holdsName);
  if (v === null || typeof v !== 'object') return false;
  return v.members.some(([k, x]) => (REFERENCE_NAMES as readonly string[]).includes(k) || holdsName(x));
}
function isReferenceShaped(v: Value): boolean {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const keys = v.members.map(([k]) => k);
  if (v.members.some(([k, x]) => k === 'type' && x === 'item_reference')) return true;
  if (!keys.includes('id')) return false;
  return keys.every((k) => k === 'id' || k === 'type') || (!keys.includes('type') && !keys.includes('role'));
}
function expectedFlag([key, v]: [string, Value]): boolean {
  return (REFERENCE_NAMES as readonly string[]).includes(key) || holdsName(v) || (Array.isArray(v) && v.some(isReferenceShaped));
}

t.test('flags agree with the rule computed from the parsed values, however the body is cut', async (t) => {
  let checked = 0;
  const disagreements: string[] = [];
  for (let n = 0; n < 3000; n++) {
    const members: Array<[string, Value]> = [['model', 'm'], ...Array.from({ length: 1 + random(5) }, () => [pick(KEYS.filter((k) => k !== 'model')), value(1)] as [string, Value])];
    const text = `{${members.map(([k, v]) => `${keyText(k)}:${write(v)}`).join(',')}}`;
    const bytes = Buffer.from(text);
    const scanner = new TopLevelScanner(64);
    const chunks: Buffer[] = [];
    for (let at = 0; at < bytes.length;) {
      const size = 1 + random(random(2) === 0 ? 4 : 40);
      chunks.push(bytes.subarray(at, at + size));
      at += size;
    }
    for (const c of chunks) scanner.write(c);
    const facts = requestFacts(new RequestBody(chunks, bytes.length), scanner);
    if (facts === undefined) {
      disagreements.push(`refused: ${text}`);
      continue;
    }
    const want = members.flatMap((m, i) => (expectedFlag(m) ? [i] : []));
    const got = facts.flagged ?? [];
    if (JSON.stringify(got) !== JSON.stringify(want)) disagreements.push(`${text}: flagged ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
    checked++;
  }
  t.same(disagreements.slice(0, 5), [], 'no disagreement');
  t.equal(checked, 3000);
});

t.test('a body without those names raises no flag', async (t) => {
  const body = Buffer.from(JSON.stringify({
    model: 'm', stream: true,
    input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'file_id "container" {"id":"x"}' }] }, { type: 'function_call', id: 'fc_1', call_id: 'c', name: 'n', arguments: '{"file_id":"f"}' }],
    tools: [{ type: 'function', name: 'f', parameters: { type: 'object', properties: { file: { type: 'string' } } } }],
    metadata: { files: 'x', file_idx: 'y', prompt_cache_key: 'z' },
  }));
  const scanner = new TopLevelScanner(64);
  scanner.write(body);
  t.equal(requestFacts(RequestBody.of(body), scanner)!.flagged, null);
});
