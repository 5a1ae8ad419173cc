/**
 * A large body (30 MB, under the 32 MiB default limit) is forwarded as the bytes the client sent,
 * whatever chunks it arrived in; when the gateway must ask a chat stream for usage, only that one
 * member changes and every other byte is the client's.
 */
import { createHash } from 'node:crypto';
import t from 'tap';
import { post, startGateway, usageOf } from './helpers/harness.js';

const sha = (text: string): string => createHash('sha256').update(text).digest('hex');
// About 30 MB of prompt, with escapes and non-ASCII text along the way.
const UNIT = 'Ein Grüß \\"quoted\\" \\u00e9 line\\n ';
const CONTENT = UNIT.repeat(Math.ceil(30_000_000 / Buffer.byteLength(UNIT)));

t.test('30 MB bodies reach the provider byte for byte', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '5']);

  const plain = `{"model":"gpt-4o-mini",  "messages":[{"role":"user","content":"${CONTENT}"}], "max_tokens": 16}`;
  t.ok(Buffer.byteLength(plain) > 30_000_000, 'over 30 MB');
  t.equal((await post(`${gw.base}/v1/chat/completions`, key, plain)).status, 200);
  t.equal(sha(gw.mock.requests.at(-1)!.body), sha(plain), 'plain call: the same bytes');

  const stream = `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"${CONTENT}"}]}`;
  t.equal((await post(`${gw.base}/v1/chat/completions`, key, stream)).status, 200);
  t.equal(sha(gw.mock.requests.at(-1)!.body), sha(`{"stream_options":{"include_usage":true},${stream.slice(1)}`), 'stream without stream_options: the option spliced in after the brace, the rest unchanged');

  const withOptions = `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"${CONTENT}"}],"stream_options": {"include_usage": false} }`;
  t.equal((await post(`${gw.base}/v1/chat/completions`, key, withOptions)).status, 200);
  t.equal(sha(gw.mock.requests.at(-1)!.body), sha(withOptions.replace('{"include_usage": false}', '{"include_usage":true}')), 'stream_options without the flag: that value replaced, the rest unchanged');

  const records = (await usageOf(gw.base, key)).requests;
  t.equal(records.length, 3);
  t.ok(records.every((r: { error: null; estimated: boolean }) => r.error === null && !r.estimated), 'each billed from the provider usage');
});
