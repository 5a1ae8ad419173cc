/**
 * `Authorization: Bearer` may be followed by more than one space (RFC 9110 §11.4: the scheme and
 * its token are separated by `1*SP`): the key after them is read. Whitespace inside the key
 * itself makes it an unknown key (401 `invalid_api_key`), as the spec says of wrapped keys.
 */
import t from 'tap';
import { post, startGateway, usageOf } from './helpers/harness.js';

const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

t.test('several spaces after Bearer are one separator; whitespace inside the key is an unknown key', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  for (const spaces of [2, 3, 8]) {
    const r = await post(`${gw.base}/v1/chat/completions`, null, CHAT, { authorization: `Bearer${' '.repeat(spaces)}${key}` });
    t.equal(r.status, 200, `${spaces} spaces after Bearer: the key is read`);
  }
  t.equal((await usageOf(gw.base, key)).requests.length, 3, 'and each call is billed to it');

  const inside: Record<string, string> = {
    'a space': `${key.slice(0, 20)} ${key.slice(20)}`,
    'two spaces': `${key.slice(0, 20)}  ${key.slice(20)}`,
    'a tab': `${key.slice(0, 20)}\t${key.slice(20)}`,
  };
  for (const [name, value] of Object.entries(inside)) {
    for (const headers of [{ authorization: `Bearer  ${value}` }, { 'x-api-key': value }]) {
      const r = await post(`${gw.base}/v1/chat/completions`, null, CHAT, headers);
      t.equal(r.status, 401, `${name} inside the key (${Object.keys(headers)[0]})`);
      t.equal(r.json.error.code, 'invalid_api_key');
    }
  }
  t.equal(gw.mock.requests.length, 3, 'only the three good calls reached the provider');
});
