/**
 * A balance (nano-dollars) or a budget (tokens) never leaves the range where a JS number is
 * exact (Number.MAX_SAFE_INTEGER): `keys create` refuses more, and `keys topup` refuses a top-up
 * whose sum would pass it, against the stored amount, writing nothing (nor an audit entry). The
 * most is reached exactly. The same through the command line (local and remote) and the admin API.
 */
import t from 'tap';
import { ADMIN_TOKEN, CLI_MODES, startGateway } from './helpers/harness.js';

const MOST = Number.MAX_SAFE_INTEGER; // 9007199254740991

for (const mode of CLI_MODES) t.test(`${mode} command line`, async (t) => {
  const gw = await startGateway(t, { cliMode: mode });
  const show = async (id: string): Promise<any> => JSON.parse((await gw.cli(['keys', 'show', id, '--json'])).stdout);
  const audits = async (): Promise<number> => JSON.parse((await gw.cli(['audit', '--json'])).stdout).length;

  await t.test('keys create: the most a key can hold, and no more', async (t) => {
    const top = await gw.createKey(['--mode', 'credit', '--balance', '9007199.254740991']);
    t.equal((await show(top.id)).balanceNanoUsd, MOST, 'a balance of exactly the most');
    const full = await gw.createKey(['--mode', 'token', '--budget', String(MOST)]);
    t.equal((await show(full.id)).budgetTokens, MOST, 'a budget of exactly the most');

    const before = await audits();
    for (const [args, line] of [
      [['--mode', 'credit', '--balance', '9223372'], /^tollgate: --balance is too large: a key can hold at most 9007199\.254740991 USD, got '9223372'\n$/],
      [['--mode', 'credit', '--balance', '9007199.254740992'], /^tollgate: --balance is too large: a key can hold at most 9007199\.254740991 USD, got '9007199\.254740992'\n$/],
      [['--mode', 'token', '--budget', '9007199254740992'], /^tollgate: --budget is too large: a key can hold at most 9007199254740991 tokens, got '9007199254740992'\n$/],
      [['--mode', 'token', '--budget', '99999999999999999999'], /^tollgate: --budget is too large: a key can hold at most 9007199254740991 tokens/],
    ] as const) {
      const r = await gw.cli(['keys', 'create', ...args]);
      t.equal(r.code, 2, `${args.join(' ')}: exit 2`);
      t.match(r.stderr, line, `${args.join(' ')}: said too large, with the most`);
      t.equal(r.stdout, '');
    }
    t.equal(await audits(), before, 'no key made');
  });

  await t.test('keys topup --usd: the sum is checked, nothing is lost', async (t) => {
    const k = await gw.createKey(['--mode', 'credit', '--balance', '9000000']);
    const entries = await audits();
    const over = await gw.cli(['keys', 'topup', k.id, '--usd', '9000000']);
    t.equal(over.code, 2, 'a top-up past the most: exit 2');
    t.equal(over.stderr, `tollgate: --usd: adding 9000000 USD would take the balance of ${k.id} past 9007199.254740991 USD, the most a key can hold; at most 7199.254740991 USD can be added\n`);
    t.equal((await show(k.id)).balanceNanoUsd, 9_000_000_000_000_000, 'the balance as it was');

    const fill = await gw.cli(['keys', 'topup', k.id, '--usd', '7199.254740991']);
    t.equal(fill.code, 0, fill.stderr);
    t.equal((await show(k.id)).balanceNanoUsd, MOST, 'filled to exactly the most');
    for (let i = 0; i < 2; i++) {
      const nano = await gw.cli(['keys', 'topup', k.id, '--usd', '0.000000001']);
      t.equal(nano.code, 2, 'one nano-dollar more: exit 2');
      t.match(nano.stderr, /^tollgate: --usd: adding 0\.000000001 USD would take the balance of key_\w+ past 9007199\.254740991 USD, the most a key can hold; nothing more can be added\n$/);
    }
    t.equal((await show(k.id)).balanceNanoUsd, MOST, 'still exactly the most');
    t.equal(await audits(), entries + 1, 'only the top-up made is in the audit trail');
  });

  await t.test('keys topup --tokens: the same for a budget', async (t) => {
    const k = await gw.createKey(['--mode', 'token', '--budget', '100000']);
    const over = await gw.cli(['keys', 'topup', k.id, '--tokens', String(MOST)]);
    t.equal(over.code, 2);
    t.equal(over.stderr, `tollgate: --tokens: adding ${MOST} tokens would take the budget of ${k.id} past ${MOST} tokens, the most a key can hold; at most ${MOST - 100_000} tokens can be added\n`);
    t.equal((await show(k.id)).budgetTokens, 100_000, 'the budget as it was');
    t.equal((await gw.cli(['keys', 'topup', k.id, '--tokens', String(MOST - 100_000)])).code, 0);
    t.equal((await show(k.id)).budgetTokens, MOST, 'exactly the most');
    t.equal((await gw.cli(['keys', 'topup', k.id, '--tokens', '1'])).code, 2, 'and not one token more');
    t.equal((await show(k.id)).budgetTokens, MOST);
  });
});

t.test('the admin API refuses the same, 400 invalid_field naming the field', async (t) => {
  const gw = await startGateway(t, { admin: true });
  const api = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> => {
    const res = await fetch(gw.admin + path, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, json: await res.json() };
  };
  const credit = (await api('POST', '/admin/v1/keys', { mode: 'credit', balance: '9000000' })).json;
  const token = (await api('POST', '/admin/v1/keys', { mode: 'token', budget: 100000 })).json;
  const cases: Array<[string, string, unknown, string, RegExp]> = [
    ['/admin/v1/keys', 'POST', { mode: 'credit', balance: '9223372' }, 'balance', /^balance is too large: a key can hold at most 9007199\.254740991 USD/],
    ['/admin/v1/keys', 'POST', { mode: 'credit', balance: 9223372 }, 'balance', /^balance is too large/],
    ['/admin/v1/keys', 'POST', { mode: 'token', budget: '9007199254740992' }, 'budget', /^budget is too large: a key can hold at most 9007199254740991 tokens/],
    ['/admin/v1/keys', 'POST', { mode: 'token', budget: 1e20 }, 'budget', /^budget is too large/],
    [`/admin/v1/keys/${credit.id}/topup`, 'POST', { usd: '9000000' }, 'usd', /^usd: adding 9000000 USD would take the balance of key_\w+ past 9007199\.254740991 USD, the most a key can hold; at most 7199\.254740991 USD can be added$/],
    [`/admin/v1/keys/${token.id}/topup`, 'POST', { tokens: MOST }, 'tokens', /^tokens: adding 9007199254740991 tokens would take the budget/],
  ];
  const audited = (await api('GET', '/admin/v1/audit')).json.length;
  for (const [path, method, body, param, message] of cases) {
    const r = await api(method, path, body);
    t.equal(r.status, 400, `${JSON.stringify(body)}: 400`);
    t.match(r.json.error, { code: 'invalid_field', param, type: 'invalid_request_error', message }, `${JSON.stringify(body)}: invalid_field, param ${param}`);
  }
  t.same((await api('GET', '/admin/v1/keys')).json.map((k: any) => [k.balanceNanoUsd, k.budgetTokens]), [[9_000_000_000_000_000, undefined], [undefined, 100_000]], 'nothing changed');
  t.equal((await api('GET', '/admin/v1/audit')).json.length, audited, 'nor was anything audited');
  const ok = await api('POST', `/admin/v1/keys/${credit.id}/topup`, { usd: '7199.254740991' });
  t.equal(ok.json.balanceNanoUsd, MOST, 'up to the most exactly');
});
