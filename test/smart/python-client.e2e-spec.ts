import { spawn } from 'child_process';
import { existsSync } from 'fs';
import { join } from 'path';
import { createInterface } from 'readline';
import type { Browser } from 'puppeteer-core';
import request from 'supertest';
import {
  clientHeaders,
  createMember,
  createPlan,
  createSmartApp,
  createTestApp,
  IDENTITY_TEST_ENV,
  TestApp,
} from '@app/testing';
import { AppServer, startAppServer } from './harness/app-server';
import { freshPage, launchChromium } from './harness/chromium';
import { freePort } from './harness/free-port';
import { decide, reachSignIn, signInBuiltIn } from './harness/member-pages';

/** The virtualenv .ci/run makes with test/smart/clients/requirements.txt (SMART_PYTHON for another). */
const PYTHON = process.env.SMART_PYTHON ?? join(__dirname, '..', '..', '.tmp', 'smart-py', 'bin', 'python');
const APP = join(__dirname, 'clients', 'confidential_app.py');
jest.setTimeout(300_000);

/**
 * SMART's Python client (client-py) as a confidential app: it finds the endpoints in the
 * CapabilityStatement, the member signs in and approves in Chromium, and the app exchanges the
 * code with its client secret and PKCE verifier, then reads the member's record.
 */
describe('SMART App Launch with the Python fhirclient, confidential app (e2e)', () => {
  let t: TestApp;
  let base: string;
  let appServer: AppServer;
  let browser: Browser;

  beforeAll(async () => {
    if (!existsSync(PYTHON))
      throw new Error(`no ${PYTHON}: .ci/run makes it (pip install -r test/smart/clients/requirements.txt)`);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ ...IDENTITY_TEST_ENV, BASE_URL: base, AUTH_URL: base });
    await t.app.listen(port, '127.0.0.1');
    appServer = await startAppServer();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await appServer?.close();
    await t?.close();
  });

  it('authorize in the browser, code exchange with the secret in Python, the member’s Patient and Observations', async () => {
    const plan = await createPlan(t, 'Acme Health');
    const app = await createSmartApp(t, plan, {
      name: 'Python Care Planner',
      confidential: true,
      redirectUris: [appServer.callbackUri],
    });
    expect(app.client_secret).toBeTruthy();
    const member = await createMember(t, plan, 'Doe');
    await request(t.server)
      .post('/r4/Observation')
      .set({ ...clientHeaders(plan, member.service_user_id), 'Content-Type': 'application/fhir+json' })
      .send({
        resourceType: 'Observation',
        status: 'final',
        code: { text: 'steps' },
        subject: { reference: `Patient/${member.patientId}` },
      })
      .expect(201);

    const child = spawn(PYTHON, [APP], {
      env: {
        ...process.env,
        FHIR_BASE: `${base}/r4`,
        CLIENT_ID: app.client_id,
        CLIENT_SECRET: app.client_secret!,
        REDIRECT_URI: appServer.callbackUri,
        SCOPE: 'openid fhirUser patient/Patient.read patient/Observation.read',
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      const first = JSON.parse((await lines.next()).value ?? '{}') as {
        authorize_url?: string;
        error?: string;
      };
      expect({ first, stderr }).toMatchObject({
        first: { authorize_url: expect.stringContaining(`${base}/oauth2/authorize?`) },
      });

      const page = await freshPage(browser);
      await page.goto(first.authorize_url!, { waitUntil: 'load' });
      await reachSignIn(page);
      await signInBuiltIn(page, member.app_user_id, member.password);
      await decide(page, 'approve');
      await page.waitForSelector('#landed');
      const landed = new URL(page.url());
      expect(landed.origin + landed.pathname).toBe(appServer.callbackUri);
      expect(landed.searchParams.get('code')).toBeTruthy();

      child.stdin.write(`${page.url()}\n`);
      const result = JSON.parse((await lines.next()).value ?? '{}') as Record<string, unknown>;
      expect({ result, stderr }).toMatchObject({
        result: {
          ready: true,
          patient_id: member.patientId,
          patient_name: 'Jane Doe',
          observations: 1,
          observation_patients: [`Patient/${member.patientId}`],
        },
      });
      expect(await exited).toBe(0);
    } finally {
      child.kill();
    }
  });
});
