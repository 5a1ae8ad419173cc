/**
 * Two leaks of the admin API closed: its CSV exports neutralise text a spreadsheet would run as a
 * formula (OWASP: a cell beginning with =, +, -, @, a tab or a carriage return gets a leading
 * '), with key names and model ids — chosen by key holders and clients — as the attack; and a
 * full key is refused anywhere in a URL (400 invalid_key_ref), while the remote command line
 * resolves one through POST /admin/v1/keys/lookup, so it never travels in a URL.
 */
import { createServer, type Server } from 'node:http';
import t from 'tap';
import { openStore } from '../src/store/store.js';
import { ADMIN_TOKEN, defaultConfig, post, readReply, runCli, startGateway, testModels, utcDay, type Harness, type Reply } from './helpers/harness.js';

/** RFC 4180: rows of cells, quotes and doubled quotes undone. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (cell += '"', i++);
      else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') (row.push(cell), (cell = ''));
    else if (c === '\r' && text[i + 1] === '\n') (row.push(cell), rows.push(row), (row = []), (cell = ''), i++);
    else cell += c;
  }
  return rows;
}

/** The CSV's rows as objects by header. */
function csvObjects(text: string): Record<string, string>[] {
  const [header, ...rows] = parseCsv(text);
  return rows.map((r) => Object.fromEntries(header!.map((h, i) => [h, r[i]!])));
}

async function admin(gw: Harness, method: string, path: string, body?: unknown, token: string | null = ADMIN_TOKEN): Promise<Reply> {
  return readReply(await fetch(gw.admin + path, {
    method,
    headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  }));
}

/** Model ids a spreadsheet would take for formulas (the catalogue's ids are what records carry). */
const FORMULA_MODELS = ['=1+2', '-2+3', '+SUM(1;2)', '@SUM(1,2)'];
/**
 * Key names a key holder could be given, or give itself through an operator's tooling. Those with
 * a control character are refused now, but may be stored from before: they are written straight
 * into the store.
 */
const FORMULA_NAMES = ['=HYPERLINK("http://evil.example","click")', '-2+3', '+A1', '@SUM(A1)', '\tcmd', '\rcmd'];

t.test('CSV exports: formula-like text is neutralised, numbers stay numbers', async (t) => {
  const models = { ...testModels() };
  for (const id of FORMULA_MODELS) models[id] = { provider: 'openai', endpoints: ['chat'], price: { input: 1, output: 2 } };
  const gw = await startGateway(t, { admin: true, config: (url) => ({ ...defaultConfig(url), models }) });
  const created: Record<string, string> = {};
  const stored: Array<[string, string]> = [];
  for (const name of [...FORMULA_NAMES, 'plain name', '-12.5']) {
    const control = /[\t\r]/.test(name);
    const r = await admin(gw, 'POST', '/admin/v1/keys', { mode: 'credit', balance: '1', name: control ? 'placeholder' : name });
    t.equal(r.status, 201);
    created[name] = r.json.id;
    if (control) stored.push([r.json.id, name]);
  }
  const store = await openStore(gw.redis === null ? { backend: 'lmdb', dataDir: gw.dataDir } : { backend: 'redis', url: gw.redis.url });
  try {
    for (const [id, name] of stored) await store.updateKey(id, (k) => ({ ...k, name }));
  } finally {
    await store.close();
  }
  const caller = await admin(gw, 'POST', '/admin/v1/keys', { mode: 'credit', balance: '1', name: '=CALLER()' });
  for (const model of FORMULA_MODELS) {
    t.equal((await post(`${gw.base}/v1/chat/completions`, caller.json.key, { model, messages: [], mock: { inputTokens: 1000, outputTokens: 100 } })).status, 200, `a call to ${JSON.stringify(model)}`);
  }
  // Yesterday and today (UTC): the calls above are in the range even when midnight fell among them.
  const now = Date.now();
  const range = `from=${utcDay(now - 86_400_000)}&to=${utcDay(now)}`;

  const records = await admin(gw, 'GET', `/admin/v1/keys/${caller.json.id}/usage?${range}&format=csv`);
  t.equal(records.status, 200);
  const rows = csvObjects(records.text);
  t.same(rows.map((r) => r.model), FORMULA_MODELS.map((m) => `'${m}`), 'model ids start with a single quote');
  t.ok(rows.every((r) => r.costNanoUsd === '1200000' && r.inputTokens === '1000' && r.status === '200'), 'numbers are written as numbers');
  t.ok(records.text.includes(`,"'@SUM(1,2)",`), 'a neutralised cell is still quoted as CSV requires');

  const totals = await admin(gw, 'GET', `/admin/v1/usage?${range}&format=csv`);
  t.equal(totals.status, 200);
  const byId = new Map(csvObjects(totals.text).map((r) => [r.id, r]));
  for (const name of FORMULA_NAMES) t.equal(byId.get(created[name]!)?.name, `'${name}`, `key name ${JSON.stringify(name)} neutralised`);
  t.equal(byId.get(created['plain name']!)?.name, 'plain name', 'other text unchanged');
  t.equal(byId.get(created['-12.5']!)?.name, '-12.5', 'text that is a plain number is not');
  t.equal(byId.get(caller.json.id)?.name, "'=CALLER()");
  t.equal(byId.get(caller.json.id)?.requests, '4', 'counts stay numbers');
  t.equal(byId.get(caller.json.id)?.costUsd, '0.004800');
  t.ok(totals.text.includes('"\'\rcmd"'), 'a cell with a carriage return is quoted');

  // The JSON answers are the data as it is: only the CSV, read by spreadsheets, is neutralised.
  const json = await admin(gw, 'GET', `/admin/v1/usage?${range}`);
  t.equal(json.json.keys.find((k: any) => k.id === created['-2+3'])?.name, '-2+3');
});

/** A relay between the command line and the admin listener that writes down every URL it passes on. */
async function recordingRelay(t: { teardown(fn: () => unknown): void }, target: string): Promise<{ url: string; urls: string[] }> {
  const urls: string[] = [];
  const server: Server = createServer((req, res) => {
    urls.push(req.url ?? '');
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => name !== 'host' && name !== 'content-length' && name !== 'connection')) as Record<string, string>;
      fetch(target + req.url, { method: req.method, headers, body: chunks.length === 0 ? undefined : Buffer.concat(chunks) }).then(async (answer) => {
        res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
        res.end(Buffer.from(await answer.arrayBuffer()));
      }, () => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const address = server.address();
  return { url: `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`, urls };
}

t.test('a full key in an admin URL is refused; the remote command line keeps it out of URLs', async (t) => {
  const gw = await startGateway(t, { admin: true });
  const key = await gw.createKey(['--mode', 'credit', '--balance', '1', '--name', 'alice']);
  const other = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  t.equal((await gw.cli(['keys', 'topup', key.id, '--usd', '1'])).code, 0, 'an audited change of the key');

  const refused = [
    [`/admin/v1/keys/${key.key}`, 'ref'],
    [`/admin/v1/keys/${key.key}/usage?format=csv`, 'ref'],
    [`/admin/v1/keys/${encodeURIComponent(key.key).replace('_', '%5F')}`, 'ref'],
    [`/admin/v1/audit?key=${key.key}`, 'key'],
    [`/admin/v1/keys?x=${key.key}`, 'x'],
    [`/admin/v1/nowhere/${key.key}`, 'ref'],
  ] as const;
  for (const [path, param] of refused) {
    const r = await admin(gw, 'GET', path);
    t.equal(r.status, 400, path.replace(key.key, 'FULLKEY'));
    t.match(r.json, { error: { code: 'invalid_key_ref', type: 'invalid_request_error', param } });
    t.match(r.json.error.message, /POST \/admin\/v1\/keys\/lookup/, 'the message says where a full key goes');
    t.notOk(r.text.includes(key.key.slice(12)), 'the answer does not repeat the key');
  }
  const change = await admin(gw, 'POST', `/admin/v1/keys/${key.key}/suspend`);
  t.equal(change.status, 400, 'a change by a full key in its URL is refused too');
  t.equal((await admin(gw, 'GET', `/admin/v1/keys/${key.id}`)).json.status, 'active', 'and not made');
  t.equal((await admin(gw, 'GET', `/admin/v1/keys/${key.key}`, undefined, null)).status, 401, 'without the token: 401 first, as always');
  t.equal((await admin(gw, 'GET', `/admin/v1/keys/${key.prefix}`)).json.id, key.id, 'a prefix still works');
  t.equal((await admin(gw, 'GET', `/admin/v1/audit?key=${key.id}`)).status, 200, 'an id still works');

  const relay = await recordingRelay(t, gw.admin!);
  const remote = (args: string[]): ReturnType<typeof runCli> => runCli([...args, '--admin-url', relay.url], { TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN });
  const local = await gw.cli(['audit', '--key', key.key, '--json']);
  t.equal(local.code, 0);
  const audit = await remote(['audit', '--key', key.key, '--json']);
  t.equal(audit.code, 0, audit.stderr);
  t.same(JSON.parse(audit.stdout), JSON.parse(local.stdout), 'remote audit --key FULLKEY lists what the local command lists');
  t.ok(JSON.parse(audit.stdout).length >= 2 && JSON.parse(audit.stdout).every((e: any) => e.keyId === key.id), 'the key\'s own entries');
  t.notOk(audit.stdout.includes(other.id));
  const shown = await remote(['keys', 'show', key.key, '--json']);
  t.equal(shown.code, 0);
  t.equal(JSON.parse(shown.stdout).id, key.id);
  t.ok(relay.urls.includes('/admin/v1/keys/lookup'), 'the key was looked up, in a body');
  t.ok(relay.urls.some((u) => u === `/admin/v1/audit?key=${key.id}`), 'then named by its id');
  t.same(relay.urls.filter((u) => u.includes(key.key.slice(8))), [], 'no URL the admin listener got carries the key');
});
