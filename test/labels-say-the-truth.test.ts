/**
 * What the gateway shows and counts says the truth: the usage page of a key with no debt, a
 * credit key and a token key alike, shows no raw `null`, `undefined` or `NaN` (in Chromium, as
 * a key holder sees it); a refusal of the gateway's own on a route that forwards nothing (a
 * `/usage/api` query it cannot read) is counted and logged with its own code, never as
 * `upstream`, the label of a provider's failure.
 */
import t from 'tap';
import { ADMIN_TOKEN, startGateway } from './helpers/harness.js';
import { DESKTOP, launchBrowser, openPage } from './helpers/browser.js';

const RAW = /\b(null|undefined|NaN)\b/;

t.test('the usage page of keys without debt shows no raw null, undefined or NaN', async (t) => {
  const [gw, browser] = await Promise.all([startGateway(t), launchBrowser(t)]);
  const credit = await gw.createKey(['--mode', 'credit', '--balance', '2']);
  const token = await gw.createKey(['--mode', 'token', '--budget', '1000']);
  for (const [name, key] of [['credit', credit.key], ['token', token.key]] as const) {
    const w = await openPage(browser, DESKTOP);
    await w.page.goto(`${gw.base}/usage`);
    await w.page.getByLabel('API key').fill(key);
    await w.page.getByLabel('API key').press('Enter');
    await w.page.locator('#report').waitFor({ state: 'visible' });
    const text = await w.page.locator('body').innerText();
    t.notMatch(text, RAW, `${name} key: no raw null, undefined or NaN on the page`);
    t.match(await w.page.locator('#left').innerText(), name === 'credit' ? /\$2\.00/ : /1,000/, `${name} key: its balance is shown`);
    t.same(w.errors, [], `${name} key: no script error`);
    await w.context.close();
  }
});

t.test('/usage/api refusing a query is counted and logged as invalid_query, not upstream', async (t) => {
  const gw = await startGateway(t, { admin: true });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const res = await fetch(`${gw.base}/usage/api?limit=0`, { headers: { authorization: `Bearer ${key}` } });
  t.equal(res.status, 400);
  t.equal((await res.json()).error.code, 'invalid_query');
  const metrics = await (await fetch(`${gw.admin}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
  const lines = metrics.split('\n').filter((l) => l.startsWith('tollgate_requests_total{') && l.includes('status="400"'));
  t.ok(lines.some((l) => l.includes('code="invalid_query"')), `counted with code="invalid_query": ${lines.join(' | ')}`);
  t.notOk(lines.some((l) => l.includes('code="upstream"') || l.includes('code="unlabelled"')), 'and not as upstream');
  // The access log is written a turn after the answer: wait for its line (the usage API is endpoint "usage").
  const refusedLine = (): string | undefined => gw.serverOut().split('\n').find((l) => l.includes('"endpoint":"usage"') && l.includes('"status":400'));
  for (let i = 0; i < 100 && refusedLine() === undefined; i++) await new Promise((resolve) => setTimeout(resolve, 100));
  t.match(refusedLine(), /"code":"invalid_query"/, 'the access log line names invalid_query');
});
