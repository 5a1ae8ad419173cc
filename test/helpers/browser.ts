/**
 * Real headless Chromium (Debian's `chromium`, see scripts/install-system-packages.sh) driven by
 * playwright-core. Each browser is closed with the test; each page records console errors,
 * uncaught exceptions and Content-Security-Policy violations so a test can assert there were none.
 */
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-quic',
];

export const DESKTOP = { name: 'desktop', width: 1280, height: 800 } as const;
export const PHONE = { name: 'phone', width: 390, height: 844 } as const;
export type Viewport = typeof DESKTOP | typeof PHONE;

/** Where screenshots go: under `.tap/` (ignored by git), one folder per test file. */
export function screenshotDir(testName: string): string {
  const dir = fileURLToPath(new URL(`../../.tap/screenshots/${testName}/`, import.meta.url));
  mkdirSync(dir, { recursive: true });
  return dir;
}

interface Teardown { teardown(fn: () => unknown): void }

/**
 * Launches Chromium; it runs on a fresh temporary profile that playwright-core creates and
 * removes, and each `openPage` gets its own context (cookies, storage) on top of it.
 */
export async function launchBrowser(t: Teardown): Promise<Browser> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  t.teardown(() => browser.close());
  return browser;
}

export interface WatchedPage {
  context: BrowserContext;
  page: Page;
  /** console messages of type error, and uncaught exceptions */
  errors: string[];
  /** `securitypolicyviolation` events seen by the document: "directive blockedURI" */
  cspViolations(): Promise<string[]>;
}

/** A new context (own storage) and page at this viewport, watched for errors. */
export async function openPage(browser: Browser, viewport: Viewport): Promise<WatchedPage> {
  const context = await browser.newContext({
    viewport: { width: viewport.width, height: viewport.height },
    deviceScaleFactor: 1,
    isMobile: viewport === PHONE,
    hasTouch: viewport === PHONE,
    acceptDownloads: true,
  });
  // Runs before the page's own script (set up by the browser, not by the page, so the
  // page's policy does not apply to it).
  await context.addInitScript(() => {
    const seen: string[] = [];
    (globalThis as any).__cspViolations = seen;
    globalThis.addEventListener('securitypolicyviolation', (e: any) => seen.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(`uncaught: ${e.message}`));
  return {
    context,
    page,
    errors,
    cspViolations: () => page.evaluate(() => (globalThis as any).__cspViolations as string[]),
  };
}
