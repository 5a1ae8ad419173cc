/**
 * Every issuer operation through the admin API over HTTP, its validation errors as the
 * envelope (400, a precise code, `param` and a message naming the field), and usage reading
 * across keys as JSON and CSV.
 */
import t from 'tap';
import { ADMIN_TOKEN, post, startGateway, utcDay } from './helpers/harness.js';

t.test('the admin API end to end', async (t) => {
  const gw = await startGateway(t, { admin: true });
  const api = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: any; text: string; type: string | null }> => {
    const res = await fetch(gw.admin + path, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
    const text = await res.text();
    let json: any;
    try { json = JSON.parse(text); } catch { json = undefined; }
    return { status: res.status, json, text, type: res.headers.get('content-type') };
  };

  const created = await api('POST', '/admin/v1/keys', { mode: 'credit', balance: '2.5', models: ['gpt-4o-mini', 'gpt-4o'], rpm: 100, expires: '2031-01-01', name: 'billing' });
  t.equal(created.status, 201);
  t.match(created.json, { mode: 'credit', balanceUsd: '2.500000', models: ['gpt-4o-mini', 'gpt-4o'], rpm: 100, expiresAt: '2031-01-01T23:59:59.999Z', name: 'billing', status: 'active' });
  t.match(created.json.key, /^gw_live_[0-9a-f]{32}$/, 'the secret, once');
  const id = created.json.id as string;
  const secret = created.json.key as string;
  t.equal((await post(`${gw.base}/v1/chat/completions`, secret, { model: 'gpt-4o-mini', messages: [], mock: { inputTokens: 100, outputTokens: 10 } })).status, 200, 'the key works at once');

  const token = await api('POST', '/admin/v1/keys', { mode: 'token', budget: 5000 });
  t.match(token.json, { mode: 'token', budgetTokens: 5000, usedTokens: 0, remainingTokens: 5000 });

  const listed = await api('GET', '/admin/v1/keys');
  t.same(listed.json.map((k: any) => k.id), [id, token.json.id]);
  t.notOk(listed.text.includes(secret), 'the list never holds a secret');
  t.equal((await api('GET', `/admin/v1/keys/${id}`)).json.id, id, 'show by id');
  t.equal((await api('GET', `/admin/v1/keys/${created.json.prefix}`)).json.id, id, 'show by prefix');
  t.equal((await api('POST', '/admin/v1/keys/lookup', { key: secret })).json.id, id, 'show by the full key, in a body');

  t.equal((await api('POST', `/admin/v1/keys/${id}/suspend`)).json.status, 'suspended');
  t.equal((await post(`${gw.base}/v1/chat/completions`, secret, { model: 'gpt-4o-mini', messages: [] })).json.error.code, 'key_suspended');
  t.equal((await api('POST', `/admin/v1/keys/${id}/resume`)).json.status, 'active');
  const toppedUp = (await api('POST', `/admin/v1/keys/${id}/topup`, { usd: '0.5' })).json;
  t.equal(toppedUp.balanceUsd, '2.999979', '2.5 − 0.000021 + 0.5');
  t.same([toppedUp.balanceNanoUsd, toppedUp.heldNanoUsd], [2_999_979_000, 0], 'and exact, in nano-dollars');
  t.equal((await api('POST', `/admin/v1/keys/${token.json.id}/topup`, { tokens: 100 })).json.budgetTokens, 5100);
  t.equal((await api('POST', `/admin/v1/keys/${id}/extend`, { expires: 'never' })).json.expiresAt, null);
  t.match((await api('PATCH', `/admin/v1/keys/${id}`, { models: null, rpm: null, name: 'renamed' })).json, { models: null, rpm: null, name: 'renamed' });
  const rotated = await api('POST', `/admin/v1/keys/${id}/rotate`);
  t.equal(rotated.status, 201);
  t.match(rotated.json, { rotatedFrom: id, account: created.json.account });
  t.not(rotated.json.key, secret);

  const models = await api('GET', '/admin/v1/models');
  t.ok(models.json.some((m: any) => m.id === 'gpt-4o-mini' && m.enabled && m.usable));
  t.match((await api('POST', '/admin/v1/models/gpt-4o/disable')).json, { id: 'gpt-4o', enabled: false });
  t.equal((await post(`${gw.base}/v1/chat/completions`, secret, { model: 'gpt-4o', messages: [] })).json.error.code, 'model_not_available');
  t.match((await api('POST', '/admin/v1/models/gpt-4o/enable')).json, { id: 'gpt-4o', enabled: true });

  await t.test('usage across keys, JSON and CSV', async (t) => {
    // The UTC day the call was recorded on, read from the record itself: a run that crosses
    // midnight between the call and this read must not look for it on the wrong day.
    const now = Date.now();
    const around = await api('GET', `/admin/v1/keys/${id}/usage?from=${utcDay(now - 86_400_000)}&to=${utcDay(now)}`);
    t.equal(around.json.requests.length, 1, 'one record since yesterday');
    const today = (around.json.requests[0].at as string).slice(0, 10);
    const usage = await api('GET', `/admin/v1/keys/${id}/usage?from=${today}&to=${today}`);
    t.equal(usage.status, 200);
    t.equal(usage.json.requests.length, 1);
    t.match(usage.json.requests[0], { model: 'gpt-4o-mini', inputTokens: 100, outputTokens: 10, costNanoUsd: 21000 });
    t.match(usage.json.daily, [{ day: today, requests: 1, costNanoUsd: 21000, tokens: 110 }]);
    const csv = await api('GET', `/admin/v1/keys/${id}/usage?from=${today}&to=${today}&format=csv`);
    t.match(csv.type, /^text\/csv/);
    const rows = csv.text.trim().split('\r\n');
    t.equal(rows.length, 2, 'a header and one record');
    t.match(rows[0], /^at,requestId,endpoint,model,/);
    t.match(rows[1], /,chat,gpt-4o-mini,false,200,100,10,/);
    const daily = await api('GET', `/admin/v1/keys/${id}/daily?from=${today}&to=${today}&format=csv`);
    t.equal(daily.text, `day,requests,costUsd,costNanoUsd,tokens\r\n${today},1,0.000021,21000,110\r\n`);
    const totals = await api('GET', `/admin/v1/usage?from=${today}&to=${today}`);
    t.same(totals.json.keys.map((k: any) => [k.id, k.requests, k.costNanoUsd]), [[id, 1, 21000], [token.json.id, 0, 0], [rotated.json.id, 0, 0]]);
    const totalsCsv = await api('GET', `/admin/v1/usage?from=${today}&to=${today}&format=csv`);
    t.equal(totalsCsv.text.split('\r\n')[0], 'id,prefix,name,mode,requests,costUsd,costNanoUsd,tokens');
    const old = await api('GET', `/admin/v1/keys/${id}/usage?from=2020-01-01&to=2020-01-31`);
    t.same(old.json.requests, [], 'nothing in an earlier range');
    t.equal(old.json.daily.length, 31, 'every day of the range');
  });

  await t.test('every validation error: 400, its code, the field in param and in the message', async (t) => {
    const cases: Array<[string, string, string, unknown, number, string, string | null]> = [
      ['no mode', 'POST', '/admin/v1/keys', { balance: '1' }, 400, 'missing_field', 'mode'],
      ['bad mode', 'POST', '/admin/v1/keys', { mode: 'gold', balance: '1' }, 400, 'invalid_field', 'mode'],
      ['credit without balance', 'POST', '/admin/v1/keys', { mode: 'credit' }, 400, 'missing_field', 'balance'],
      ['credit with budget', 'POST', '/admin/v1/keys', { mode: 'credit', budget: 5 }, 400, 'conflicting_fields', 'budget'],
      ['token with balance', 'POST', '/admin/v1/keys', { mode: 'token', balance: '1' }, 400, 'conflicting_fields', 'balance'],
      ['negative balance', 'POST', '/admin/v1/keys', { mode: 'credit', balance: '-1' }, 400, 'invalid_field', 'balance'],
      ['10 decimals', 'POST', '/admin/v1/keys', { mode: 'credit', balance: '1.0000000001' }, 400, 'invalid_field', 'balance'],
      ['budget not whole', 'POST', '/admin/v1/keys', { mode: 'token', budget: 1.5 }, 400, 'invalid_field', 'budget'],
      ['balance past the most a key can hold', 'POST', '/admin/v1/keys', { mode: 'credit', balance: '9223372' }, 400, 'invalid_field', 'balance'],
      ['budget past the most a key can hold', 'POST', '/admin/v1/keys', { mode: 'token', budget: '9007199254740992' }, 400, 'invalid_field', 'budget'],
      ['a name with a NUL', 'POST', '/admin/v1/keys', { mode: 'credit', balance: '1', name: 'a\u0000b' }, 400, 'invalid_field', 'name'],
      ['rpm 0', 'POST', '/admin/v1/keys', { mode: 'credit', balance: '1', rpm: 0 }, 400, 'invalid_field', 'rpm'],
      ['unknown model', 'POST', '/admin/v1/keys', { mode: 'credit', balance: '1', models: ['gpt-9'] }, 400, 'unknown_model', 'models'],
      ['models not a list', 'POST', '/admin/v1/keys', { mode: 'credit', balance: '1', models: 5 }, 400, 'invalid_field', 'models'],
      ['impossible date', 'POST', '/admin/v1/keys', { mode: 'credit', balance: '1', expires: '2027-02-30' }, 400, 'invalid_field', 'expires'],
      ['unknown field', 'POST', '/admin/v1/keys', { mode: 'credit', balance: '1', colour: 'red' }, 400, 'unknown_field', 'colour'],
      ['not JSON', 'POST', '/admin/v1/keys', '{mode', 400, 'invalid_json', null],
      ['a JSON array', 'POST', '/admin/v1/keys', '[]', 400, 'invalid_json', null],
      ['topup both', 'POST', `/admin/v1/keys/${id}/topup`, { usd: '1', tokens: 5 }, 400, 'conflicting_fields', 'tokens'],
      ['topup neither', 'POST', `/admin/v1/keys/${id}/topup`, {}, 400, 'missing_field', 'usd'],
      ['topup zero', 'POST', `/admin/v1/keys/${id}/topup`, { usd: '0' }, 400, 'invalid_field', 'usd'],
      ['topup tokens on credit', 'POST', `/admin/v1/keys/${id}/topup`, { tokens: 5 }, 400, 'wrong_key_mode', 'tokens'],
      ['topup whose sum passes the most', 'POST', `/admin/v1/keys/${id}/topup`, { usd: '9007199.254740991' }, 400, 'invalid_field', 'usd'],
      ['topup in tokens whose sum passes it', 'POST', `/admin/v1/keys/${token.json.id}/topup`, { tokens: Number.MAX_SAFE_INTEGER }, 400, 'invalid_field', 'tokens'],
      ['extend without expires', 'POST', `/admin/v1/keys/${id}/extend`, {}, 400, 'missing_field', 'expires'],
      ['extend with garbage', 'POST', `/admin/v1/keys/${id}/extend`, { expires: 'tomorrow' }, 400, 'invalid_field', 'expires'],
      ['set nothing', 'PATCH', `/admin/v1/keys/${id}`, {}, 400, 'missing_field', null],
      ['set rpm text', 'PATCH', `/admin/v1/keys/${id}`, { rpm: 'many' }, 400, 'invalid_field', 'rpm'],
      ['set a name with a line separator', 'PATCH', `/admin/v1/keys/${id}`, { name: 'a\u2028b' }, 400, 'invalid_field', 'name'],
      ['unknown key id', 'GET', '/admin/v1/keys/key_0000000000000000', undefined, 404, 'key_not_found', 'ref'],
      ['bad key ref', 'GET', '/admin/v1/keys/alice', undefined, 400, 'invalid_key_ref', 'ref'],
      ['lookup without key', 'POST', '/admin/v1/keys/lookup', {}, 400, 'missing_field', 'key'],
      ['lookup unknown key', 'POST', '/admin/v1/keys/lookup', { key: `gw_live_${'0'.repeat(32)}` }, 404, 'key_not_found', 'ref'],
      ['unknown model switch', 'POST', '/admin/v1/models/gpt-9/enable', undefined, 404, 'unknown_model', 'id'],
      ['bad day', 'GET', `/admin/v1/keys/${id}/usage?from=2027-02-30`, undefined, 400, 'invalid_field', 'from'],
      ['from after to', 'GET', '/admin/v1/usage?from=2027-02-02&to=2027-02-01', undefined, 400, 'invalid_field', 'from'],
      ['bad format', 'GET', '/admin/v1/usage?format=xml', undefined, 400, 'invalid_field', 'format'],
      ['unknown query parameter', 'GET', '/admin/v1/usage?days=3', undefined, 400, 'unknown_field', 'days'],
      ['a filter the key list does not take', 'GET', '/admin/v1/keys?status=suspended', undefined, 400, 'unknown_field', 'status'],
      ['a page the model list does not take', 'GET', '/admin/v1/models?limit=1', undefined, 400, 'unknown_field', 'limit'],
      ['a query on an action', 'POST', `/admin/v1/keys/${id}/suspend?force=1`, undefined, 400, 'unknown_field', 'force'],
      ['a body on suspend', 'POST', `/admin/v1/keys/${id}/suspend`, { reason: 'abuse' }, 400, 'unknown_field', 'reason'],
      ['a body on rotate', 'POST', `/admin/v1/keys/${id}/rotate`, { expires: 'never' }, 400, 'unknown_field', 'expires'],
      ['a body on a model switch', 'POST', '/admin/v1/models/gpt-4o/disable', { until: '2027-01-01' }, 400, 'unknown_field', 'until'],
      ['limit too large', 'GET', `/admin/v1/keys/${id}/usage?limit=100000`, undefined, 400, 'invalid_field', 'limit'],
      ['unknown route', 'GET', '/admin/v1/nothing', undefined, 404, 'unknown_endpoint', null],
      ['wrong method', 'DELETE', `/admin/v1/keys/${id}`, undefined, 404, 'unknown_endpoint', null],
    ];
    const before = (await api('GET', '/admin/v1/keys')).text;
    const modelsBefore = (await api('GET', '/admin/v1/models')).text;
    for (const [name, method, path, body, status, code, param] of cases) {
      const r = await api(method, path, body);
      t.equal(r.status, status, `${name}: ${status}`);
      t.match(r.json, { error: { code, param, type: 'invalid_request_error' } }, `${name}: ${code}`);
      if (param !== null && param !== 'ref' && code !== 'unknown_model') t.match(r.json.error.message, new RegExp(`\\b${param}\\b`), `${name}: the message names ${param}`);
    }
    t.equal((await api('GET', '/admin/v1/keys')).text, before, 'no refused request changed anything');
    t.equal((await api('GET', '/admin/v1/models')).text, modelsBefore, 'nor any model\'s switch');
    t.equal((await api('POST', `/admin/v1/keys/${id}/suspend`, {})).status, 200, 'an action\'s empty object is no field: taken');
  });
});
