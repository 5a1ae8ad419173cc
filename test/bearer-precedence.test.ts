/**
 * Which credential the gateway reads: `Authorization: Bearer <key>` or `x-api-key: <key>`;
 * when both arrive the Bearer value wins, and `x-api-key` is read only when Authorization is
 * absent or not a Bearer value. A key that is not exactly the issued 40 characters is unknown.
 */
import t from 'tap';
import { startGateway, usageOf } from './helpers/harness.js';

const CHAT = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });

t.test('credential carriers and their precedence', async (t) => {
  const gw = await startGateway(t);
  const a = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const b = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const garbage = 'gw_live_ffffffffffffffffffffffffffffffff';

  const call = async (headers: Record<string, string>): Promise<{ status: number; code: string | undefined }> => {
    const res = await fetch(`${gw.base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: CHAT });
    const text = await res.text();
    let code: string | undefined;
    try {
      code = JSON.parse(text)?.error?.code;
    } catch {
      code = undefined;
    }
    return { status: res.status, code };
  };
  const listed = async (key: string): Promise<number> => (await usageOf(gw.base, key)).requests.length;

  t.test('either carrier alone works', async (t) => {
    t.same(await call({ authorization: `Bearer ${a.key}` }), { status: 200, code: undefined });
    t.same(await call({ 'x-api-key': a.key }), { status: 200, code: undefined });
  });

  t.test('the scheme name is case-insensitive', async (t) => {
    t.equal((await call({ authorization: `bearer ${a.key}` })).status, 200);
    t.equal((await call({ authorization: `BEARER ${a.key}` })).status, 200);
  });

  t.test('with both carriers the Bearer value is used', async (t) => {
    t.same(await call({ authorization: `Bearer ${a.key}`, 'x-api-key': 'garbage' }), { status: 200, code: undefined }, 'valid bearer, garbage x-api-key');
    t.same(await call({ authorization: `Bearer ${garbage}`, 'x-api-key': a.key }), { status: 401, code: 'invalid_api_key' }, 'garbage bearer, valid x-api-key');
    t.same(await call({ authorization: 'Bearer nonsense', 'x-api-key': a.key }), { status: 401, code: 'invalid_api_key' }, 'malformed bearer, valid x-api-key');
    // Both valid: the call is billed to the Bearer key only.
    const aBefore = await listed(a.key);
    const bBefore = await listed(b.key);
    t.equal((await call({ authorization: `Bearer ${a.key}`, 'x-api-key': b.key })).status, 200);
    t.equal(await listed(a.key), aBefore + 1, 'the Bearer key is billed');
    t.equal(await listed(b.key), bBefore, 'the x-api-key key is not');
  });

  t.test('a non-Bearer Authorization falls back to x-api-key', async (t) => {
    const basic = `Basic ${Buffer.from(`user:${garbage}`).toString('base64')}`;
    t.same(await call({ authorization: basic, 'x-api-key': a.key }), { status: 200, code: undefined }, 'Basic + valid x-api-key');
    t.same(await call({ authorization: `Token ${garbage}`, 'x-api-key': a.key }), { status: 200, code: undefined }, 'other scheme + valid x-api-key');
    t.same(await call({ authorization: basic, 'x-api-key': garbage }), { status: 401, code: 'invalid_api_key' }, 'Basic + unknown x-api-key');
    t.same(await call({ authorization: basic }), { status: 401, code: 'missing_api_key' }, 'Basic alone carries no gateway key');
  });

  t.test('anything but the exact key is an unknown key', async (t) => {
    const k = a.key;
    const variants: Record<string, string> = {
      truncated: k.slice(0, -1),
      'prefix only': k.slice(0, 12),
      'wrapped (split by a space)': `${k.slice(0, 20)} ${k.slice(20)}`,
      'upper-cased': k.toUpperCase(),
      'hex upper-cased': k.slice(0, 8) + k.slice(8).toUpperCase(),
      'trailing extra characters': `${k}0`,
      'trailing junk': `${k}xyz`,
      'without its prefix': k.slice(8),
      'other prefix': `gw_test_${k.slice(8)}`,
    };
    for (const [name, value] of Object.entries(variants)) {
      t.same(await call({ authorization: `Bearer ${value}` }), { status: 401, code: 'invalid_api_key' }, `Bearer: ${name}`);
      t.same(await call({ 'x-api-key': value }), { status: 401, code: 'invalid_api_key' }, `x-api-key: ${name}`);
    }
    t.same(await call({ authorization: `Bearer ${k} extra` }), { status: 401, code: 'invalid_api_key' }, 'a second word after the key');
  });

  t.test('no credential at all', async (t) => {
    t.same(await call({}), { status: 401, code: 'missing_api_key' });
  });
});
