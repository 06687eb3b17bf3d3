import { mkdirSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import type { Browser, Page } from 'puppeteer-core';
import request from 'supertest';
import {
  clientHeaders,
  createMember,
  createPlan,
  createSmartApp,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  SmartMember,
  TestApp,
  TestClient,
} from '@app/testing';
import type { IssuedSmartApp } from '../../src/modules/auth/clients/clients.service';
import { ClientsService } from '../../src/modules/auth/clients/clients.service';
import { FEDERATED_CALLBACK_PATH } from '../../src/modules/auth/member-federation/member-federation.service';
import { federatedSignIn } from '../../src/modules/auth/member-federation/member-sign-in';
import { AppServer, startAppServer } from './harness/app-server';
import { freshPage, launchChromium } from './harness/chromium';
import { freePort } from './harness/free-port';
import {
  appOutcome,
  clickAndWait,
  decide,
  reachSignIn,
  signInBuiltIn,
  SIGN_IN_FORM,
} from './harness/member-pages';
import { startUpstreamProvider, UpstreamProvider } from './harness/upstream-provider';

/**
 * The pages are photographed on every run; into docs/smart/ (the pictures docs/smart.md shows)
 * with UPDATE_SCREENSHOTS=1, elsewhere into a temporary folder so a run leaves the tree clean.
 */
const SCREENSHOTS =
  process.env.UPDATE_SCREENSHOTS === '1'
    ? join(__dirname, '..', '..', 'docs', 'smart')
    : join(tmpdir(), 'smart-screenshots');
const SCOPE = 'launch/patient openid fhirUser patient/Patient.rs patient/Observation.rs';
/** Each test walks several pages in Chromium: generous on a loaded 2-core machine. */
jest.setTimeout(300_000);

/**
 * SMART's official JS client (fhirclient.js, its browser build) in Debian's Chromium, from a page
 * on another origin, does a standalone launch against /r4 and /stu3 as a member of a health plan
 * would: sign in (built in, and at the plan's own OpenID provider), approve, land back in the app,
 * read the Patient and search Observations; deny; narrow the scopes; revoke on the
 * connected-apps page, after which the app's next call fails.
 */
describe('SMART App Launch in a real browser (e2e, Chromium + fhirclient.js)', () => {
  let t: TestApp;
  let base: string;
  let appServer: AppServer;
  let browser: Browser;
  let plan: TestClient;
  let app: IssuedSmartApp;
  let member: SmartMember;
  let stu3PatientId: string;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ ...IDENTITY_TEST_ENV, BASE_URL: base, AUTH_URL: base });
    await t.app.listen(port, '127.0.0.1');
    appServer = await startAppServer();
    browser = await launchChromium();
    plan = await createPlan(t, 'Acme Health');
    app = await createSmartApp(t, plan, { name: 'Step Counter', redirectUris: [appServer.redirectUri] });
    member = await createMember(t, plan, 'Doe');
    stu3PatientId = await seedRecord(plan, member.service_user_id, member.patientId);
    // another member's record in the same plan: never in this member's results
    const other = await createMember(t, plan, 'Roe');
    await seedRecord(plan, other.service_user_id, other.patientId);
  });
  afterAll(async () => {
    await browser?.close();
    await appServer?.close();
    await t?.close();
  });

  /** An R4 Observation for the member's R4 Patient, and an STU3 Patient with an Observation; returns the STU3 id. */
  async function seedRecord(owner: TestClient, userId: number, r4PatientId: string): Promise<string> {
    const headers = { ...clientHeaders(owner, userId), 'Content-Type': 'application/fhir+json' };
    const observation = (subject: string) => ({
      resourceType: 'Observation',
      status: 'final',
      code: { coding: [{ system: 'http://loinc.org', code: '55423-8', display: 'Number of steps' }] },
      subject: { reference: `Patient/${subject}` },
      valueQuantity: { value: 8000, unit: 'steps' },
    });
    await request(t.server).post('/r4/Observation').set(headers).send(observation(r4PatientId)).expect(201);
    const stu3 = await request(t.server)
      .post('/stu3/Patient')
      .set(headers)
      .send({ resourceType: 'Patient', name: [{ given: ['Jane'], family: 'Doe' }] })
      .expect(201);
    await request(t.server)
      .post('/stu3/Observation')
      .set(headers)
      .send(observation(stu3.body.id))
      .expect(201);
    return stu3.body.id as string;
  }

  async function launch(
    page: Page,
    version: 'r4' | 'stu3',
    client: IssuedSmartApp,
    scope = SCOPE,
  ): Promise<void> {
    await page.goto(appServer.launchUrl(`${base}/${version}`, client.client_id, scope), {
      waitUntil: 'load',
    });
    await reachSignIn(page);
  }

  async function screenshot(page: Page, name: string): Promise<void> {
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: join(SCREENSHOTS, name), fullPage: true });
  }

  it('R4: sign in, approve, back in the app: its Patient and its Observations only', async () => {
    const page = await freshPage(browser);
    await launch(page, 'r4', app);
    await page.waitForSelector(SIGN_IN_FORM);
    expect(new URL(page.url()).origin).toBe(base);
    await screenshot(page, 'sign-in.png');
    await signInBuiltIn(page, member.app_user_id, member.password);
    await page.waitForSelector('button[name="decision"][value="approve"]');
    await screenshot(page, 'consent.png');
    await decide(page, 'approve');
    const { result, error } = await appOutcome(page);
    expect(error).toBeUndefined();
    expect(new URL(page.url()).origin).toBe(appServer.origin);
    expect(result).toMatchObject({
      granted: SCOPE,
      contextPatient: member.patientId,
      patient: { ok: true, id: member.patientId },
      observations: { ok: true, subjects: [`Patient/${member.patientId}`] },
    });
  });

  it('STU3: the same launch against /stu3 reads the member’s STU3 record', async () => {
    const page = await freshPage(browser);
    await launch(page, 'stu3', app);
    await signInBuiltIn(page, member.app_user_id, member.password);
    await decide(page, 'approve');
    const { result, error } = await appOutcome(page);
    expect(error).toBeUndefined();
    expect(result).toMatchObject({
      contextPatient: stu3PatientId,
      patient: { ok: true, id: stu3PatientId },
      observations: { ok: true, subjects: [`Patient/${stu3PatientId}`] },
    });
  });

  it('deny: the app gets access_denied and no token', async () => {
    const page = await freshPage(browser);
    await launch(page, 'r4', app);
    await signInBuiltIn(page, member.app_user_id, member.password);
    await decide(page, 'deny');
    const { result, error } = await appOutcome(page);
    expect(result).toBeUndefined();
    expect(error?.message).toMatch(/access_denied/);
  });

  it('narrowed: the member unticks Observations; the app reads the Patient and is refused the search', async () => {
    const page = await freshPage(browser);
    await launch(page, 'r4', app);
    await signInBuiltIn(page, member.app_user_id, member.password);
    await decide(page, 'approve', ['patient/Observation.rs']);
    const { result, error } = await appOutcome(page);
    expect(error).toBeUndefined();
    expect(result?.granted?.split(' ').sort()).toEqual(
      ['launch/patient', 'openid', 'fhirUser', 'patient/Patient.rs'].sort(),
    );
    expect(result?.patient).toMatchObject({ ok: true, id: member.patientId });
    expect(result?.observations).toMatchObject({ ok: false, status: 403 });
  });

  it('revoke on the connected-apps page: the app’s next call fails', async () => {
    // a member of their own, so the page lists this one grant
    const revoker = await createMember(t, plan, 'Poe');
    const page = await freshPage(browser);
    await launch(page, 'r4', app);
    await signInBuiltIn(page, revoker.app_user_id, revoker.password);
    await decide(page, 'approve');
    const { result } = await appOutcome(page);
    expect(result?.patient).toMatchObject({ ok: true });
    expect(await page.evaluate('window.readAgain()')).toEqual({ ok: true, id: revoker.patientId });

    // the member, signed in on this browser, opens their connected apps in another tab
    const apps = await page.browserContext().newPage();
    apps.setDefaultTimeout(page.getDefaultTimeout());
    apps.setDefaultNavigationTimeout(page.getDefaultNavigationTimeout());
    await apps.setViewport({ width: 1000, height: 800 });
    await apps.goto(`${base}/oauth2/member/apps`, { waitUntil: 'load' });
    const revoke = `button[aria-label="Revoke ${app.name}"]`;
    await apps.waitForSelector(revoke);
    await screenshot(apps, 'connected-apps.png');
    expect(await apps.$$(revoke)).toHaveLength(1);
    await clickAndWait(apps, revoke);
    expect(await apps.$$(revoke)).toHaveLength(0);

    const after = (await page.evaluate('window.readAgain()')) as { ok: boolean; status?: number };
    expect(after).toMatchObject({ ok: false, status: 401 });
  });

  describe('federated sign-in at the plan’s own OpenID provider', () => {
    let provider: UpstreamProvider;
    let fedPlan: TestClient;
    let fedApp: IssuedSmartApp;
    let fedMember: { service_user_id: number; patientId: string };

    beforeAll(async () => {
      fedPlan = await createPlan(t, 'Federated Health');
      fedApp = await createSmartApp(t, fedPlan, {
        name: 'Sleep Diary',
        redirectUris: [appServer.redirectUri],
      });
      const user = await createUser(t, fedPlan, 'M-2002');
      const patient = await request(t.server)
        .post('/r4/Patient')
        .set({ ...clientHeaders(fedPlan, user.service_user_id), 'Content-Type': 'application/fhir+json' })
        .send({ resourceType: 'Patient', name: [{ given: ['Carol'], family: 'Fed' }] })
        .expect(201);
      fedMember = { service_user_id: user.service_user_id, patientId: patient.body.id };
      await seedRecord(fedPlan, user.service_user_id, patient.body.id);
      provider = await startUpstreamProvider({
        clients: [
          {
            client_id: 'acme-fhir',
            client_secret: 'upstream-secret',
            redirect_uris: [`${base}${FEDERATED_CALLBACK_PATH}`],
          },
        ],
        accounts: { carol: { member_id: 'M-2002' }, mallory: { member_id: 'M-0000' } },
      });
      await t.app.get(ClientsService).setMemberSignIn(
        fedPlan.client_id,
        federatedSignIn({
          issuer: provider.issuer,
          clientId: 'acme-fhir',
          clientSecret: 'upstream-secret',
          claim: 'member_id',
          scope: 'openid member',
        }),
      );
    });
    afterAll(async () => provider?.stop());

    /** From the plan's sign-in page to the provider's form, then signs `login` in there. */
    async function signInFederated(page: Page, login: string, shot?: string): Promise<void> {
      await page.waitForSelector('a#federated-sign-in');
      if (shot) await screenshot(page, shot);
      await clickAndWait(page, 'a#federated-sign-in');
      expect(new URL(page.url()).origin).toBe(provider.issuer);
      await page.waitForSelector('input[name="login"]');
      await page.type('input[name="login"]', login);
      await page.type('input[name="password"]', 'any password');
      await clickAndWait(page, 'button[type=submit]');
    }

    it('sign in at the provider, approve, back in the app with the federated member’s record', async () => {
      const page = await freshPage(browser);
      await launch(page, 'r4', fedApp);
      await signInFederated(page, 'carol', 'sign-in-federated.png');
      await decide(page, 'approve');
      const { result, error } = await appOutcome(page);
      expect(error).toBeUndefined();
      expect(result).toMatchObject({
        contextPatient: fedMember.patientId,
        patient: { ok: true, id: fedMember.patientId },
        observations: { ok: true, subjects: [`Patient/${fedMember.patientId}`] },
      });
    });

    it('a person the plan does not know: the app gets access_denied', async () => {
      const page = await freshPage(browser);
      await launch(page, 'r4', fedApp);
      await signInFederated(page, 'mallory');
      const { result, error } = await appOutcome(page);
      expect(result).toBeUndefined();
      expect(error?.message).toMatch(/access_denied/);
    });
  });
});
