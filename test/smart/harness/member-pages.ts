import type { Page } from 'puppeteer-core';

/**
 * What a member does on the auth pages, as a person would: by the labels, fields and buttons the
 * pages show (docs/smart.md), waiting for each page rather than for a time.
 */
export interface AppOutcome {
  granted?: string;
  contextPatient?: string;
  patient?: { ok: boolean; id?: string; status?: number; message?: string };
  observations?: { ok: boolean; subjects?: string[]; status?: number; message?: string };
}

export const SIGN_IN_FORM = 'form[action="/oauth2/member/sign-in"]';
export const CONSENT_FORM = 'form[action="/oauth2/member/consent"]';

/** Clicks and waits for the navigation it starts. */
export async function clickAndWait(page: Page, selector: string): Promise<void> {
  await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click(selector)]);
}

/** After the app's launch page: the plan's sign-in page, or the launch's error shown by the app. */
export async function reachSignIn(page: Page): Promise<void> {
  const found = await page.waitForSelector(`${SIGN_IN_FORM}, a#federated-sign-in, #error`);
  if ((await found!.evaluate((el) => el.id)) === 'error') {
    throw new Error(`the app could not launch: ${await found!.evaluate((el) => el.textContent)}`);
  }
}

/** On the sign-in page: types the member ID and password, presses "Sign in". */
export async function signInBuiltIn(page: Page, memberId: string, password: string): Promise<void> {
  await page.waitForSelector(SIGN_IN_FORM);
  await page.type('#username', memberId);
  await page.type('#password', password);
  await clickAndWait(page, `${SIGN_IN_FORM} button[type=submit]`);
}

/** On the consent page: unticks `untick`, then presses Allow or Deny. */
export async function decide(page: Page, decision: 'approve' | 'deny', untick: string[] = []): Promise<void> {
  await page.waitForSelector(CONSENT_FORM);
  for (const scope of untick) await page.click(`input[name="scope"][value="${scope}"]`);
  await clickAndWait(page, `button[name="decision"][value="${decision}"]`);
}

/** The test app's record of what it got (#result), or its error (#error) — whichever comes first. */
export async function appOutcome(
  page: Page,
): Promise<{ result?: AppOutcome; error?: { message: string; status?: number } }> {
  const found = await page.waitForSelector('#result, #error');
  const id = await found!.evaluate((el) => el.id);
  const text = await found!.evaluate((el) => el.textContent ?? '');
  return id === 'result' ? { result: JSON.parse(text) as AppOutcome } : { error: JSON.parse(text) };
}
