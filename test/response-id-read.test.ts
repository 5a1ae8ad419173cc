/**
 * UsageTap.responseId: the id of the stored response an answer made, read from the answer's
 * own structure — a plain answer's top-level `id`, a stream's terminal event's `response.id` —
 * never from a client's words echoed inside it (`metadata`, `user`, `instructions`), however
 * the bytes are split; only for the format whose provider stores responses.
 */
import t from 'tap';
import { FORMATS } from '../src/formats/index.js';
import { UsageTap } from '../src/meter/tap.js';

const USAGE = '"usage":{"input_tokens":3,"output_tokens":2,"total_tokens":5}';

/** Feeds `body` to a fresh tap in chunks of `size` bytes and ends it. */
function read(body: string, stream: boolean, size = body.length, format = FORMATS.responses): UsageTap {
  const tap = new UsageTap(format, stream);
  const bytes = Buffer.from(body);
  for (let at = 0; at < bytes.length; at += size) tap.write(bytes.subarray(at, at + size));
  tap.end();
  return tap;
}

t.test('a plain answer: its own top-level id, wherever it stands', async (t) => {
  const cases: Array<[string, string, string | null]> = [
    ['written first, compact', `{"id":"resp_real","object":"response",${USAGE},"metadata":{"id":"resp_planted"}}`, 'resp_real'],
    ['written first, pretty-printed (as OpenAI sends it)', `{\n  "id": "resp_real",\n  "object": "response",\n  ${USAGE},\n  "user": "resp_planted"\n}`, 'resp_real'],
    ['after an echoed member that holds an id', `{"metadata":{"id":"resp_planted"},"object":"response","id":"resp_real",${USAGE}}`, 'resp_real'],
    ['after a planted "id" text in a string', `{"instructions":"\\"id\\":\\"resp_planted\\"","id":"resp_real",${USAGE}}`, 'resp_real'],
    ['none at the top level, one nested', `{"object":"response","metadata":{"id":"resp_planted"},${USAGE}}`, null],
    ['not a string', `{"id":42,"metadata":{"id":"resp_planted"},${USAGE}}`, null],
    ['a string no response id can be', `{"id":"../resp_x",${USAGE}}`, null],
    ['an id written with an escape (decoded)', `{"id":"resp\\u005freal",${USAGE}}`, 'resp_real'],
  ];
  for (const [name, body, expected] of cases) {
    for (const size of [body.length, 7, 1]) t.equal(read(body, false, size).responseId, expected, `${name}, in chunks of ${size}`);
  }
});

function event(type: string, response: string): string {
  return `event: ${type}\ndata: {"type":"${type}","sequence_number":1,"response":${response}}\n\n`;
}

t.test('a stream: the terminal event\'s response id', async (t) => {
  const created = event('response.created', '{"id":"resp_real","status":"in_progress","metadata":{"id":"resp_planted"}}');
  const delta = 'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"{\\"id\\":\\"resp_planted\\"}"}\n\n';
  const completed = event('response.completed', `{"metadata":{"id":"resp_planted"},"id":"resp_real","status":"completed",${USAGE}}`);
  for (const size of [10_000, 13, 1]) {
    t.equal(read(created + delta + completed, true, size).responseId, 'resp_real', `completed, in chunks of ${size}`);
    t.equal(read(created + delta + event('response.incomplete', `{"id":"resp_real",${USAGE}}`), true, size).responseId, 'resp_real', 'incomplete');
    t.equal(read(created + event('response.failed', '{"id":"resp_real","status":"failed"}'), true, size).responseId, 'resp_real', 'failed');
    t.equal(read(created + delta, true, size).responseId, null, 'cut before its terminal event: none');
  }
  t.equal(read(event('response.completed', `{"id":"no/such/id",${USAGE}}`), true).responseId, null, 'an id no response can have');
});

t.test('formats whose provider stores no responses: none', async (t) => {
  t.equal(read(`{"id":"chatcmpl_1","object":"chat.completion","usage":{"prompt_tokens":1,"completion_tokens":1}}`, false, 100, FORMATS.chat).responseId, null);
  t.equal(read(`{"id":"msg_1","type":"message","usage":{"input_tokens":1,"output_tokens":1}}`, false, 100, FORMATS.messages).responseId, null);
});
