/**
 * The usage checker's report where more than one thing stops a key, and where nothing billed:
 * - a suspended key that has also expired, or also has no credit left, is not told that resuming
 *   it is enough (the API's `state` names the first check that fails, the page every remedy);
 * - a key whose only calls failed has a total of nothing and no busiest day;
 * - text that is not a key of this gateway (a whole page pasted, another service's secret) is
 *   answered as an unknown key without being sent anywhere;
 * - a call's cache reads and writes and its reasoning tokens are shown beside its input and output.
 * In Chromium, against a gateway on the mock provider.
 */
import t from 'tap';
import { post, startGateway, usageOf } from './helpers/harness.js';
import { DESKTOP, PHONE, launchBrowser, openPage } from './helpers/browser.js';

t.test('the usage checker: every remedy, nothing billed, not a key', async (t) => {
  const [gw, browser] = await Promise.all([startGateway(t), launchBrowser(t)]);
  const [lapsed, broke, failing] = await Promise.all([
    gw.createKey(['--mode', 'credit', '--balance', '1', '--expires', '2020-01-01']),
    gw.createKey(['--mode', 'credit', '--balance', '0.000001']),
    gw.createKey(['--mode', 'credit', '--balance', '1']),
  ]);
  t.equal((await post(`${gw.base}/v1/chat/completions`, broke.key, { model: 'gpt-4o-mini', messages: [] })).status, 200, 'the broke key\'s one call costs more than it had');
  t.equal((await post(`${gw.base}/v1/chat/completions`, failing.key, { model: 'gpt-4o-mini', messages: [], mock: { status: 529 } })).status, 529, 'the failing key\'s one call fails at the provider');
  for (const k of [lapsed, broke]) t.equal((await gw.cli(['keys', 'suspend', k.prefix])).code, 0, 'suspended');
  t.same([(await usageOf(gw.base, lapsed.key)).key.state, (await usageOf(gw.base, broke.key)).key.state], ['suspended', 'suspended'], 'the API names the first check that fails');

  const show = async (key: string, viewport: typeof DESKTOP | typeof PHONE = DESKTOP) => {
    const w = await openPage(browser, viewport);
    await w.page.goto(`${gw.base}/usage`);
    const field = w.page.getByLabel('API key');
    await field.fill(key);
    await field.press('Enter');
    return w;
  };

  await t.test('suspended and expired: resume and extend', async (t) => {
    const w = await show(lapsed.key);
    await w.page.locator('#report').waitFor({ state: 'visible' });
    const detail = await w.page.locator('#verdict-detail').innerText();
    t.match(detail, /resume it and to extend it \(it also expired at the end of 1 Jan 2020 \(UTC\)\)/, 'both remedies named');
    t.notMatch(detail, /the same key then works again/, 'not told resuming is enough');
    t.match(detail, /key_suspended/, 'the code clients get is the first check\'s');
    t.match(await w.page.locator('#facts').innerText(), /Expires\s+The end of 1 Jan 2020 \(UTC\); expired /, 'the facts say it expired');
    await w.context.close();
  });

  await t.test('suspended and out of credit: resume and top up', async (t) => {
    const w = await show(broke.key);
    await w.page.locator('#report').waitFor({ state: 'visible' });
    const detail = await w.page.locator('#verdict-detail').innerText();
    t.match(detail, /resume it and to top it up \(it also has no credit left\)/, 'both remedies named');
    t.notMatch(detail, /the same key then works again/, 'not told resuming is enough');
    await w.context.close();
  });

  await t.test('only failed calls: no busiest day', async (t) => {
    const w = await show(failing.key);
    await w.page.locator('#report').waitFor({ state: 'visible' });
    const summary = await w.page.locator('#chart-summary').innerText();
    t.equal(summary, 'Total $0.000000 over 1 request.', 'the total, and no day picked out of thirty empty ones');
    await w.context.close();
  });

  await t.test('the parts of a call\'s tokens priced apart: cache reads and writes, reasoning', async (t) => {
    const parts = await gw.createKey(['--mode', 'credit', '--balance', '1']);
    const cached = await post(`${gw.base}/v1/messages`, parts.key, { model: 'claude-haiku-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], mock: { inputTokens: 600, cachedTokens: 300, cacheWriteTokens: 100 } }, { 'anthropic-version': '2023-06-01' });
    t.equal(cached.status, 200);
    t.equal((await post(`${gw.base}/v1/chat/completions`, parts.key, { model: 'gpt-4o-mini', messages: [], mock: { inputTokens: 20, outputTokens: 1500, reasoningTokens: 1200 } })).status, 200);
    const [reasoned, read] = (await usageOf(gw.base, parts.key)).requests;
    const w = await show(parts.key);
    await w.page.locator('#report').waitFor({ state: 'visible' });
    const cells = (i: number) => w.page.locator('#requests-body tr').nth(i).locator('td').allInnerTexts();
    const [newest, older] = [await cells(0), await cells(1)];
    t.equal(older[3], `${read.inputTokens.toLocaleString('en-US')} (300 cached, 100 written to the cache)`, 'cache reads and writes beside the input');
    t.equal(newest[4], `${reasoned.outputTokens.toLocaleString('en-US')} (1,200 reasoning)`, 'reasoning beside the output');
    t.equal(older[4], String(read.outputTokens), 'no note where there is nothing to say');
    await w.context.close();
    const phone = await show(parts.key, PHONE);
    await phone.page.locator('#report').waitFor({ state: 'visible' });
    t.equal(await phone.page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth), 0, 'the longer cells fit a phone\'s width');
    await phone.context.close();
  });

  await t.test('a remembered key is not kept once a check finds the key unknown', async (t) => {
    const w = await openPage(browser, DESKTOP);
    await w.page.goto(`${gw.base}/usage`);
    const field = w.page.getByLabel('API key');
    await field.fill(failing.key);
    await w.page.getByLabel('Remember on this device').check();
    await field.press('Enter');
    await w.page.locator('#report').waitFor({ state: 'visible' });
    await w.page.reload();
    await w.page.locator('#report').waitFor({ state: 'visible' });
    t.equal(await w.page.locator('#report-title').innerText(), `Key ${failing.prefix}…`, 'remembered across a reload');
    await field.fill(`gw_live_${'0'.repeat(32)}`);
    await field.press('Enter');
    await w.page.getByRole('alert').filter({ hasText: 'not recognised' }).waitFor();
    t.equal(await w.page.evaluate(() => localStorage.length), 0, 'nothing kept on the device');
    await w.page.reload();
    await w.page.waitForLoadState('load');
    t.ok(await w.page.locator('#report').isHidden(), 'the next visit shows no report of the older key');
    t.equal(await field.inputValue(), '', 'and fills in no key');
    await w.context.close();
  });

  await t.test('a whole page pasted, or another service\'s key: unknown, and never sent', async (t) => {
    for (const [what, text] of [['20,000 characters', `gw_live_${'a'.repeat(20_000)}`], ['an OpenAI key', `sk-proj-${'x'.repeat(48)}`]] as const) {
      const w = await openPage(browser, DESKTOP);
      const asked: string[] = [];
      w.page.on('request', (r) => {
        if (r.url().includes('/usage/api')) asked.push(r.url());
      });
      await w.page.goto(`${gw.base}/usage`);
      const field = w.page.getByLabel('API key');
      await field.fill(text);
      await field.press('Enter');
      await w.page.getByRole('alert').filter({ hasText: 'not recognised' }).waitFor();
      t.same(asked, [], `${what}: no request carried it`);
      t.equal(await w.page.locator('#key').getAttribute('aria-invalid'), 'true', `${what}: the field is marked`);
      await w.context.close();
    }
  });
});
