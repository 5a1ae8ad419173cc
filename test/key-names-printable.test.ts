/**
 * A key's name holds no control character (C0, DEL, C1), no line or paragraph separator and no
 * text-direction control (override, embedding, isolate, mark):
 * `keys create` and `keys set` refuse one (exit 2), as the admin API does (400 invalid_field,
 * param name). A name stored before that rule, and an audit entry recording it, are printed with
 * such characters escaped, so that no name can make `keys list`, `keys show` or `audit` print a
 * row of its own.
 */
import t from 'tap';
import { openStore, type StorePlan } from '../src/store/store.js';
import { ADMIN_TOKEN, CLI_MODES, startGateway, type Harness } from './helpers/harness.js';

const FORGED = 'evil\nkey_fake  gw_live_0000  credit';

/** The gateway's own store, opened in this process as another process would: to write what the issuer no longer lets through. */
async function storeOf(gw: Harness): Promise<Awaited<ReturnType<typeof openStore>>> {
  const plan: StorePlan = gw.redis === null ? { backend: 'lmdb', dataDir: gw.dataDir } : { backend: 'redis', url: gw.redis.url };
  return openStore(plan);
}

for (const mode of CLI_MODES) t.test(`${mode} command line`, async (t) => {
  const gw = await startGateway(t, { cliMode: mode });

  await t.test('a name with a control character or a line break is refused', async (t) => {
    const k = await gw.createKey(['--mode', 'credit', '--balance', '1', '--name', 'plain']);
    const before = (await gw.cli(['keys', 'list', '--json'])).stdout;
    const names: Array<[string, string]> = [
      ['a line feed', FORGED], ['a carriage return', 'a\rb'], ['a tab', 'a\tb'], ['an escape (ANSI colours)', '\u001b[31mred'],
      ['DEL', 'a\u007fb'], ['a C1 control (NEL)', 'a\u0085b'], ['a line separator', 'a\u2028b'], ['a paragraph separator', 'a\u2029b'],
      ['a right-to-left override', 'team\u202Egnp.exe'], ['a left-to-right isolate', 'a\u2066b'], ['a right-to-left mark', 'a\u200Fb'], ['an Arabic letter mark', 'a\u061Cb'],
    ];
    for (const [what, name] of names) {
      for (const args of [['keys', 'create', '--mode', 'credit', '--balance', '1', '--name', name], ['keys', 'set', k.id, '--name', name]]) {
        const r = await gw.cli(args);
        t.equal(r.code, 2, `${args[1]} with ${what}: exit 2`);
        t.match(r.stderr, /^tollgate: --name must not contain control characters, line breaks or text-direction controls \(U\+[0-9A-F]{4} at character \d+\)\n$/, `${args[1]} with ${what}: one line saying why`);
        t.equal(r.stdout, '');
      }
    }
    t.equal((await gw.cli(['keys', 'list', '--json'])).stdout, before, 'nothing made or changed');
    const fine = await gw.cli(['keys', 'set', k.id, '--name', 'José — équipe 🚀 "ops" 👩\u200D💻 می\u200Cخواهم']);
    t.equal(fine.code, 0, 'any other text is a name');
  });

  await t.test('a name stored with control characters is printed escaped', async (t) => {
    const k = await gw.createKey(['--mode', 'credit', '--balance', '1']);
    const store = await storeOf(gw);
    try {
      // As an issuer change would have written it before names were checked: with its audit entry.
      const name = `${FORGED}\r\u001b[2J\u0085\u2028\u202e\u061c`;
      await store.audited(
        () => ({ at: Date.now(), action: 'key.set', keyId: k.id, actor: 'cli@test', address: null, detail: { name } }),
        () => store.updateKey(k.id, (key) => ({ ...key, name })),
      );
    } finally {
      await store.close();
    }
    const escaped = String.raw`evil\nkey_fake  gw_live_0000  credit\r\x1b[2J\x85\u2028\u202e\u061c`;
    const keys = JSON.parse((await gw.cli(['keys', 'list', '--json'])).stdout) as unknown[];
    const list = await gw.cli(['keys', 'list']);
    t.equal(list.code, 0);
    const rows = list.stdout.trimEnd().split('\n');
    t.equal(rows.length, 1 + keys.length, 'keys list: a header and one line per key, nothing forged');
    t.ok(rows.find((r) => r.startsWith(k.id))!.endsWith(escaped), 'the name, escaped, on its key\'s line');
    t.notOk(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202e]/.test(list.stdout), 'no control character printed');

    const show = await gw.cli(['keys', 'show', k.id]);
    t.match(show.stdout, new RegExp(`^  name {9}${escaped.replace(/[\\[]/g, '\\$&')}$`, 'm'), 'keys show: the name escaped on its line');
    t.equal(show.stdout.split('\n').filter((l) => l.startsWith('  ')).length, show.stdout.trimEnd().split('\n').length, 'every line one of its rows');
    t.equal(JSON.parse((await gw.cli(['keys', 'show', k.id, '--json'])).stdout).name, `${FORGED}\r\u001b[2J\u0085\u2028\u202e\u061c`, '--json gives the name as stored');

    const audit = await gw.cli(['audit', '--key', k.id]);
    t.equal(audit.stdout.trimEnd().split('\n').length, 3, 'audit: a header, the key\'s creation and the change, nothing forged');
    t.ok(audit.stdout.trimEnd().endsWith(`name=${escaped}`), 'the name escaped in the detail');
  });
});

t.test('the admin API refuses such a name, 400 invalid_field, param name', async (t) => {
  const gw = await startGateway(t, { admin: true });
  const api = async (method: string, path: string, body: unknown): Promise<{ status: number; json: any }> => {
    const res = await fetch(gw.admin + path, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, json: await res.json() };
  };
  const k = (await api('POST', '/admin/v1/keys', { mode: 'credit', balance: '1', name: 'ok' })).json;
  // (Described in words: such a character in a test's name would break its TAP line too.)
  for (const [what, method, path, body] of [
    ['create, a NUL', 'POST', '/admin/v1/keys', { mode: 'credit', balance: '1', name: 'a\u0000b' }],
    ['create, a line feed', 'POST', '/admin/v1/keys', { mode: 'credit', balance: '1', name: FORGED }],
    ['set, a paragraph separator', 'PATCH', `/admin/v1/keys/${k.id}`, { name: 'a\u2029b' }],
    ['set, a C1 control (CSI)', 'PATCH', `/admin/v1/keys/${k.id}`, { name: '\u009b31m' }],
    ['set, a right-to-left override', 'PATCH', `/admin/v1/keys/${k.id}`, { name: 'a\u202eb' }],
  ] as const) {
    const r = await api(method, path, body);
    t.equal(r.status, 400, `${what}: 400`);
    t.match(r.json.error, { code: 'invalid_field', param: 'name', message: /^name must not contain control characters, line breaks or text-direction controls/ }, `${what}: invalid_field, param name`);
  }
  const keys = (await api('GET', '/admin/v1/keys', undefined)).json;
  t.same(keys.map((x: any) => x.name), ['ok'], 'nothing made or renamed');
});
