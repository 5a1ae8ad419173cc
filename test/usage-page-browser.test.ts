/**
 * The public usage checker in a real browser: a key holder opens /usage, pastes a key and
 * reads where it stands — balance or budget, why calls would fail, the calls just made,
 * the 30-day chart — on a desktop and a phone-sized screen.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { post, startGateway, usageOf, type Harness } from './helpers/harness.js';
import { DESKTOP, launchBrowser, openPage, PHONE, screenshotDir, type Viewport, type WatchedPage } from './helpers/browser.js';

const SHOTS = screenshotDir('usage-page-browser');
const VIEWPORTS: Viewport[] = [DESKTOP, PHONE];
const UNAUTHORIZED_FETCH = /Failed to load resource: the server responded with a status of 401/;

/** Opens /usage, types the key into the labelled field and submits with the keyboard. */
async function check(w: WatchedPage, base: string, key: string): Promise<void> {
  await w.page.goto(`${base}/usage`);
  const field = w.page.getByLabel('API key');
  await field.fill(key);
  await field.press('Enter');
}

async function reportShown(w: WatchedPage): Promise<void> {
  await w.page.locator('#report').waitFor({ state: 'visible' });
}

async function finish(t: Test, w: WatchedPage, name: string, key: string, allow: RegExp[] = []): Promise<void> {
  const { page } = w;
  t.notOk(page.url().includes(key), 'the key is not in the page address');
  t.equal(await page.locator('#key').getAttribute('type'), 'password', 'the key field is a password field');
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  t.ok(overflow <= 0, `nothing runs off the side of the screen (overflow ${overflow}px)`);
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  t.same(await w.cspViolations(), [], 'no Content-Security-Policy violations');
  t.same(w.errors.filter((e) => !allow.some((a) => a.test(e))), [], 'no console errors');
  await w.context.close();
}

t.test('the usage checker page', async (t) => {
  const [gw, browser] = await Promise.all([startGateway(t), launchBrowser(t)]);
  const [credit, token, suspended, broke] = await Promise.all([
    gw.createKey(['--mode', 'credit', '--balance', '5', '--rpm', '600', '--name', 'Research team',
      '--models', 'gpt-4o-mini,gpt-4o,claude-haiku-4-5', '--expires', '2099-12-31']),
    gw.createKey(['--mode', 'token', '--budget', '1000']),
    gw.createKey(['--mode', 'credit', '--balance', '1']),
    gw.createKey(['--mode', 'credit', '--balance', '0.000001']),
  ]);

  // The credit key: three models, then one provider error, then one stream without usage.
  const messages = { model: 'claude-haiku-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] };
  const calls = await Promise.all([
    ...Array.from({ length: 12 }, () => post(`${gw.base}/v1/chat/completions`, credit.key, { model: 'gpt-4o-mini', messages: [] })),
    ...Array.from({ length: 5 }, () => post(`${gw.base}/v1/responses`, credit.key, { model: 'gpt-4o', input: 'hi', mock: { inputTokens: 100, outputTokens: 50 } })),
    ...Array.from({ length: 3 }, () => post(`${gw.base}/v1/messages`, credit.key, messages, { 'anthropic-version': '2023-06-01' })),
    // The token key: three calls. The suspended key: two calls before its issuer suspends it.
    ...Array.from({ length: 3 }, () => post(`${gw.base}/token/v1/chat/completions`, token.key, { model: 'gpt-4o-mini', max_tokens: 20, messages: [] })),
    ...Array.from({ length: 2 }, () => post(`${gw.base}/v1/chat/completions`, suspended.key, { model: 'gpt-4o-mini', messages: [] })),
    // A key whose only call costs more than was left.
    post(`${gw.base}/v1/chat/completions`, broke.key, { model: 'gpt-4o-mini', messages: [] }),
  ]);
  t.same(calls.map((c) => c.status), calls.map(() => 200), 'every call went through');
  t.equal((await post(`${gw.base}/v1/chat/completions`, credit.key, { model: 'gpt-4o-mini', messages: [], mock: { status: 529 } })).status, 529);
  t.equal((await post(`${gw.base}/v1/chat/completions`, credit.key, { model: 'gpt-4o-mini', messages: [], stream: true, mock: { noUsage: true } })).status, 200);
  t.equal((await gw.cli(['keys', 'suspend', suspended.prefix])).code, 0);

  const [creditUsage, tokenUsage, suspendedUsage, brokeUsage] = await Promise.all(
    [credit, token, suspended, broke].map((k) => usageOf(gw.base, k.key, '?limit=500')));
  t.equal(creditUsage.requests.length, 22, 'every forwarded call is recorded');
  t.equal(suspendedUsage.key.state, 'suspended');
  t.equal(brokeUsage.key.state, 'insufficient_credit');

  const unknown = `gw_live_${'0123456789abcdef'.repeat(2)}`;

  t.test('one self-contained page under a strict policy, never cached', async (t) => {
    const res = await fetch(`${gw.base}/usage`);
    t.equal(res.status, 200);
    t.match(res.headers.get('content-type'), /^text\/html/);
    t.equal(res.headers.get('cache-control'), 'no-store');
    const html = await res.text();
    const csp = new Map((res.headers.get('content-security-policy') ?? '').split(';').map((d) => {
      const [name, ...values] = d.trim().split(/\s+/);
      return [name!, values] as const;
    }));
    t.same(csp.get('default-src'), ["'none'"]);
    t.same(csp.get('connect-src'), ["'self'"], 'it talks to its own origin only');
    t.same(csp.get('form-action'), ["'none'"], 'the form can never be sent as a URL');
    t.notMatch(res.headers.get('content-security-policy'), /unsafe-inline|unsafe-eval|https?:/);
    const hash = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
    const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => hash(m[1]!));
    const styles = [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => hash(m[1]!));
    t.equal(scripts.length, 1);
    t.equal(styles.length, 1);
    t.same(csp.get('script-src'), scripts, 'the one inline script, allowed by its hash');
    t.same(csp.get('style-src'), styles, 'the one inline stylesheet, allowed by its hash');
    t.notMatch(html, /<script[^>]*\ssrc=|<link[^>]*stylesheet|@import|url\(\s*['"]?https?:/i, 'nothing is loaded from elsewhere');
  });

  for (const vp of VIEWPORTS) {
    t.test(`a credit key, ${vp.name}`, async (t) => {
      const w = await openPage(browser, vp);
      const { page } = w;
      await check(w, gw.base, credit.key);
      await reportShown(w);

      t.equal(await page.evaluate(() => document.activeElement?.id), 'report-title', 'focus moves to the report');
      t.match(await page.locator('#report-title').innerText(), credit.prefix);
      t.equal(await page.locator('#balance').innerText(), `$${creditUsage.key.balanceUsd} left`, 'the balance the gateway holds');
      t.match(await page.locator('#verdict-sentence').innerText(), /go through/);
      const facts = await page.locator('#facts').innerText();
      t.match(facts, /Research team/);
      t.match(facts, /600 requests per minute/);
      t.match(facts, /31 Dec 2099/);
      for (const m of ['gpt-4o-mini', 'gpt-4o', 'claude-haiku-4-5']) t.match(facts, m, `allowed model ${m} is listed`);
      await t.resolves(page.locator('#status').filter({ hasText: 'Usage loaded' }).waitFor(), 'the status line announces the result');

      // The chart: one bar per day; the days with spend are those of the calls made, each with the
      // day's total (today alone, unless the calls and this page fall on both sides of midnight UTC).
      const bars = page.locator('#chart svg rect.bar');
      t.equal(await bars.count(), 30);
      const spent = await page.locator('#chart svg rect.bar:not([height="0"])').evaluateAll((rs) => rs.map((r) => [r.getAttribute('data-day'), Number(r.getAttribute('data-value'))]));
      const daysSpent = creditUsage.daily.filter((d: any) => d.costNanoUsd > 0).map((d: any) => [d.day, d.costNanoUsd]);
      t.ok(daysSpent.length > 0, 'the calls made spent something');
      t.same(spent, daysSpent, 'a bar for each day with spend, with the spend of the calls made');
      const models = await page.locator('#model-list').innerText();
      for (const m of ['gpt-4o-mini', 'gpt-4o', 'claude-haiku-4-5']) t.match(models, m, `${m} in the split by model`);

      // The rows: the newest 20 first, then the rest.
      const ids = () => page.locator('#requests-body tr').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-request-id')));
      const all = creditUsage.requests.map((r: any) => r.requestId);
      t.same(await ids(), all.slice(0, 20), 'the newest 20 calls, newest first');
      const first = page.locator('#requests-body tr').first();
      t.match(await first.innerText(), /Estimated/, 'the newest call, a stream without usage, is marked estimated');
      const second = page.locator('#requests-body tr').nth(1);
      t.match(await second.innerText(), /upstream_status_529/, 'the provider error is shown with its marker');
      t.match(await second.innerText(), /529/);
      await page.getByRole('button', { name: 'Load more' }).focus();
      await page.keyboard.press('Enter');
      await page.locator('#requests-summary').filter({ hasText: 'Showing all 22 requests' }).waitFor();
      t.same(await ids(), all, 'load more brings the older calls');
      t.ok(await page.getByRole('button', { name: 'Load more' }).isHidden(), 'nothing more to load');
      t.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-request-id')), all[20], 'focus moves to the first loaded row');

      if (vp === DESKTOP) {
        // CSV of what is loaded.
        const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download CSV' }).click()]);
        const csv = readFileSync((await download.path())!, 'utf8').trim().split('\r\n');
        t.equal(csv[0]!.split(',')[1], 'request_id');
        t.same(csv.slice(1).map((l) => l.split(',')[1]), all, 'one line per loaded request, newest first');
        const header = csv[0]!.split(',');
        const nano = header.indexOf('cost_nano_usd');
        t.equal(nano, header.length - 1, 'the exact charge is the last column');
        t.same(csv.slice(1).map((l) => { const cells = l.split(','); return cells[cells.length - 1] === '' ? null : Number(cells[cells.length - 1]); }),
          creditUsage.requests.map((r: any) => r.costNanoUsd), 'each line carries the exact charge in nano-dollars');
        t.match(download.suggestedFilename(), new RegExp(`^usage-${credit.prefix}-.*\\.csv$`));

        // Not remembered unless asked; remembered when ticked; forgotten when unticked.
        t.same(await page.evaluate(() => ({ ...localStorage })), {}, 'nothing stored on the device by default');
        await page.getByLabel('Remember on this device').check();
        await page.reload();
        await reportShown(w);
        t.equal(await page.locator('#key').inputValue(), credit.key, 'a remembered key is filled in again');
        t.equal(await page.locator('#balance').innerText(), `$${creditUsage.key.balanceUsd} left`);
        await page.getByLabel('Remember on this device').uncheck();
        t.same(await page.evaluate(() => ({ ...localStorage })), {}, 'unticking forgets the key');
        await page.reload();
        t.equal(await page.locator('#key').inputValue(), '', 'a forgotten key is not filled in');
        t.ok(await page.locator('#report').isHidden());

        // "Show" reveals the typed key and hides it again; "Forget key" clears the page.
        await check(w, gw.base, credit.key);
        await reportShown(w);
        const reveal = page.getByRole('button', { name: 'Show key' });
        await reveal.click();
        t.equal(await page.locator('#key').getAttribute('type'), 'text');
        t.equal(await reveal.getAttribute('aria-pressed'), 'true');
        await reveal.click();
        t.equal(await page.locator('#key').getAttribute('type'), 'password');
        await page.getByRole('button', { name: 'Forget key' }).click();
        t.equal(await page.locator('#key').inputValue(), '', 'forget clears the field');
        t.ok(await page.locator('#report').isHidden(), 'and the report');
        t.equal(await page.evaluate(() => document.activeElement?.id), 'key', 'focus returns to the key field');
        await check(w, gw.base, credit.key);
        await reportShown(w);
      }
      await finish(t, w, `credit-${vp.name}`, credit.key);
      t.notOk(gw.serverLog().includes(credit.key), 'the key is never written to the gateway log');
    });

    t.test(`a token key, ${vp.name}`, async (t) => {
      const w = await openPage(browser, vp);
      const { page } = w;
      await check(w, gw.base, token.key);
      await reportShown(w);
      const k = tokenUsage.key;
      t.ok(k.usedTokens > 0);
      t.equal(await page.locator('#balance').innerText(), `${k.remainingTokens.toLocaleString('en-US')} tokens left`);
      t.match(await page.locator('#left').innerText(), `${k.usedTokens} of 1,000 tokens used`);
      t.equal(await page.locator('#left .meter .fill').count(), 1, 'the budget has a bar');
      t.match(await page.locator('#verdict-sentence').innerText(), /go through/);
      t.match(await page.locator('#chart-title').innerText(), /Tokens per day/);
      const spent = await page.locator('#chart svg rect.bar:not([height="0"])').evaluateAll((rs) => rs.map((r) => Number(r.getAttribute('data-value'))));
      // Today's bar alone, unless the calls and this page fall on both sides of midnight UTC.
      const daysUsed = tokenUsage.daily.filter((d: any) => d.tokens > 0).map((d: any) => d.tokens);
      t.ok(daysUsed.length > 0, 'the calls made used tokens');
      t.same(spent, daysUsed, 'a bar for each day with tokens used, with the tokens used');
      t.same(await page.locator('#requests-body tr').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-request-id'))),
        tokenUsage.requests.map((r: any) => r.requestId));
      t.match(await page.locator('#requests thead').innerText(), /Tokens charged/i);
      await finish(t, w, `token-${vp.name}`, token.key);
    });

    t.test(`a suspended key, ${vp.name}`, async (t) => {
      const w = await openPage(browser, vp);
      const { page } = w;
      await check(w, gw.base, suspended.key);
      await reportShown(w);
      t.match(await page.locator('#verdict-sentence').innerText(), /fail because its issuer has suspended it/);
      t.match(await page.locator('#verdict-detail').innerText(), /key_suspended/);
      t.equal(await page.locator('#balance').innerText(), `$${suspendedUsage.key.balanceUsd} left`);
      t.same(await page.locator('#requests-body tr').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-request-id'))),
        suspendedUsage.requests.map((r: any) => r.requestId), 'the calls made before the suspension are listed');
      await finish(t, w, `suspended-${vp.name}`, suspended.key);
    });

    if (vp === DESKTOP) t.test(`a key out of credit, ${vp.name}`, async (t) => {
      const w = await openPage(browser, vp);
      const { page } = w;
      await check(w, gw.base, broke.key);
      await reportShown(w);
      // The last call cost more than was left: the balance is below zero.
      const balance = brokeUsage.key.balanceUsd as string;
      t.match(balance, /^-/);
      const shown = `-$${balance.slice(1)}`;
      t.equal(await page.locator('#balance').innerText(), `${shown} overdrawn`);
      t.match(await page.locator('#verdict-sentence').innerText(), `fail because it has no credit left (balance ${shown})`);
      t.match(await page.locator('#verdict-detail').innerText(), /top-up/);
      t.match(await page.locator('#verdict-detail').innerText(), /insufficient_credit/);
      await finish(t, w, `no-credit-${vp.name}`, broke.key);
    });

    t.test(`an unknown key, ${vp.name}`, async (t) => {
      const w = await openPage(browser, vp);
      const { page } = w;
      await page.goto(`${gw.base}/usage`);
      await page.getByLabel('API key').press('Enter');
      await page.getByRole('alert').filter({ hasText: 'Paste your API key first' }).waitFor();
      await check(w, gw.base, unknown);
      await page.getByRole('alert').filter({ hasText: 'not recognised' }).waitFor();
      t.ok(await page.locator('#report').isHidden(), 'nothing about any key is shown');
      t.equal(await page.locator('#key').getAttribute('aria-invalid'), 'true');
      t.equal(await page.evaluate(() => document.activeElement?.id), 'key', 'focus goes back to the key field');
      t.notMatch(await page.locator('body').innerText(), /\$\d|tokens left|Recent requests/);
      await finish(t, w, `unknown-${vp.name}`, unknown, [UNAUTHORIZED_FETCH]);
    });
  }
});
