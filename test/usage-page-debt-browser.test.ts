/**
 * The usage page says a key's debt plainly: a token key used past its budget shows how many
 * tokens it is over (not "0 tokens left"), a credit key below zero what it owes; and each
 * record says why its tokens were estimated and which part was priced at the highest rate.
 */
import { join } from 'node:path';
import t from 'tap';
import { leverConfig } from './helpers/lever-models.js';
import { post, startGateway, usageOf } from './helpers/harness.js';
import { DESKTOP, launchBrowser, openPage, PHONE, screenshotDir } from './helpers/browser.js';

const SHOTS = screenshotDir('usage-page-debt-browser');

t.test('debt and pricing notes on the usage page', async (t) => {
  const [gw, browser] = await Promise.all([startGateway(t, { config: leverConfig }), launchBrowser(t)]);
  const [token, credit] = await Promise.all([
    gw.createKey(['--mode', 'token', '--budget', '10']),
    gw.createKey(['--mode', 'credit', '--balance', '0.0001']),
  ]);
  const chat = (model: string, mock: Record<string, unknown>): Record<string, unknown> => ({ model, messages: [{ role: 'user', content: 'hi' }], mock });
  t.equal((await post(`${gw.base}/token/v1/chat/completions`, token.key, chat('gpt-4o-mini', { inputTokens: 4000, outputTokens: 1000 }))).status, 200);
  // Credit: an answer whose usage is {} (estimated), then one an unpriced tier answered (worst case).
  t.equal((await post(`${gw.base}/v1/chat/completions`, credit.key, chat('tiered', { usageJson: '{}' }))).status, 200);
  t.equal((await post(`${gw.base}/v1/chat/completions`, credit.key, { ...chat('tiered', { serviceTier: 'flex', inputTokens: 100, outputTokens: 20 }) })).status, 402,
    'the estimate already took the balance below zero');
  const creditUsage = await usageOf(gw.base, credit.key);
  t.ok(creditUsage.key.balanceNanoUsd < 0);

  for (const vp of [DESKTOP, PHONE]) {
    t.test(`a token key over its budget, ${vp.name}`, async (t) => {
      const w = await openPage(browser, vp);
      const { page } = w;
      await page.goto(`${gw.base}/usage`);
      await page.getByLabel('API key').fill(token.key);
      await page.getByLabel('API key').press('Enter');
      await page.locator('#report').waitFor({ state: 'visible' });
      t.equal(await page.locator('#balance').innerText(), '4,990 tokens over budget');
      t.match(await page.locator('#debt').innerText(), 'This key used 4,990 tokens more than its budget');
      t.match(await page.locator('#left').innerText(), '5,000 of 10 tokens used');
      t.match(await page.locator('#verdict-sentence').innerText(), '(5,000 of 10 tokens, 4,990 over)');
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      t.ok(overflow <= 0, `nothing runs off the side (${overflow}px)`);
      await page.screenshot({ path: join(SHOTS, `token-over-${vp.name}.png`), fullPage: true });
      t.same(await w.cspViolations(), []);
      t.same(w.errors, []);
      await w.context.close();
    });
  }

  t.test('a credit key below zero, with an estimated record', async (t) => {
    const w = await openPage(browser, DESKTOP);
    const { page } = w;
    await page.goto(`${gw.base}/usage`);
    await page.getByLabel('API key').fill(credit.key);
    await page.getByLabel('API key').press('Enter');
    await page.locator('#report').waitFor({ state: 'visible' });
    const owed = -creditUsage.key.balanceNanoUsd;
    const owedText = `$0.${String(Math.round(owed / 1000)).padStart(6, '0')}`;
    t.match(await page.locator('#debt').innerText(), `This key owes ${owedText}`);
    t.match(await page.locator('#verdict-sentence').innerText(), `it owes ${owedText}.`);
    const row = await page.locator('#requests-body tr').first().innerText();
    t.match(row, "Estimated (the provider's usage had no prompt_tokens)", 'the reason, in words');
    await page.screenshot({ path: join(SHOTS, `credit-owes-${DESKTOP.name}.png`), fullPage: true });
    t.same(w.errors.filter((e) => !/status of 402/.test(e)), []);
    await w.context.close();
  });

  t.test('a worst-case priced record says so', async (t) => {
    const k = await gw.createKey(['--mode', 'credit', '--balance', '1']);
    t.equal((await post(`${gw.base}/v1/chat/completions`, k.key, chat('tiered', { serviceTier: 'flex' }))).status, 200);
    const w = await openPage(browser, DESKTOP);
    const { page } = w;
    await page.goto(`${gw.base}/usage`);
    await page.getByLabel('API key').fill(k.key);
    await page.getByLabel('API key').press('Enter');
    await page.locator('#report').waitFor({ state: 'visible' });
    const row = await page.locator('#requests-body tr').first().innerText();
    t.match(row, 'Priced at the highest rate (no price for service_tier:flex)');
    t.match(row, 'flex tier');
    t.same(w.errors, []);
    await w.context.close();
  });
});
