import { existsSync } from 'fs';
import puppeteer, { Browser, Page } from 'puppeteer-core';

/** Debian's Chromium (.ci/run installs it); CHROMIUM_PATH for another one. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Generous: navigations and selectors on a loaded 2-core machine. */
export const BROWSER_STEP_TIMEOUT_MS = 60_000;

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`no Chromium at ${CHROMIUM_PATH}: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  }
  return puppeteer.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    // root in CI: no user namespace sandbox; small /dev/shm in containers
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--no-first-run', '--lang=en-US'],
    timeout: 120_000,
    protocolTimeout: 180_000,
  });
}

/** A page in a fresh browser context (its own cookies and storage), with generous timeouts. */
export async function freshPage(browser: Browser): Promise<Page> {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  page.setDefaultTimeout(BROWSER_STEP_TIMEOUT_MS);
  page.setDefaultNavigationTimeout(BROWSER_STEP_TIMEOUT_MS);
  await page.setViewport({ width: 1000, height: 800 });
  return page;
}
