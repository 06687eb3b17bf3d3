import request from 'supertest';
import {
  bearer,
  clientHeaders,
  createPlan,
  createMember,
  createSmartApp,
  createTestApp,
  createUser,
  formField,
  IDENTITY_TEST_ENV,
  pkce,
  TestApp,
  TestClient,
} from '@app/testing';
import type { IssuedSmartApp } from '../../src/modules/auth/clients/clients.service';
import { ClientsService } from '../../src/modules/auth/clients/clients.service';
import { FEDERATED_CALLBACK_PATH } from '../../src/modules/auth/member-federation/member-federation.service';
import { federatedSignIn } from '../../src/modules/auth/member-federation/member-sign-in';
import { CookieWalker, formAction, linkHref } from './harness/cookie-walker';
import { freePort } from './harness/free-port';
import { startUpstreamProvider, UpstreamProvider } from './harness/upstream-provider';

const APP_REDIRECT = 'https://app.example/callback';

/**
 * The federated sign-in routes end to end over HTTP: authorize → the plan's sign-in page with
 * its "Sign in with <plan>" link → the plan's real OpenID provider → our callback → consent →
 * the app's code → a token reading the member's record. Every failure reaches the app as an RFC
 * 6749 error with its state, or (when nothing ties it to a request) an error page; never a 500.
 */
describe('federated member sign-in routes (e2e, real OpenID provider)', () => {
  let t: TestApp;
  let base: string;
  let provider: UpstreamProvider;
  let plan: TestClient;
  let app: IssuedSmartApp;
  let member: { service_user_id: number; patientId: string };

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ ...IDENTITY_TEST_ENV, BASE_URL: base, AUTH_URL: base });
    await t.app.listen(port, '127.0.0.1');
    plan = await createPlan(t, 'Federated Health');
    app = await createSmartApp(t, plan, { name: 'Sleep Diary', redirectUris: [APP_REDIRECT] });
    const user = await createUser(t, plan, 'M-3003');
    const patient = await request(t.server)
      .post('/r4/Patient')
      .set({ ...clientHeaders(plan, user.service_user_id), 'Content-Type': 'application/fhir+json' })
      .send({ resourceType: 'Patient', name: [{ given: ['Carol'], family: 'Fed' }] })
      .expect(201);
    member = { service_user_id: user.service_user_id, patientId: patient.body.id };
    provider = await startUpstreamProvider({
      clients: [
        {
          client_id: 'fhir',
          client_secret: 'upstream-secret',
          redirect_uris: [`${base}${FEDERATED_CALLBACK_PATH}`],
        },
      ],
      accounts: { carol: { member_id: 'M-3003' }, mallory: { member_id: 'M-0000' } },
    });
    await federate(plan, provider.issuer);
  });
  afterAll(async () => {
    await provider?.stop();
    await t?.close();
  });

  function federate(client: TestClient, issuer: string) {
    return t.app.get(ClientsService).setMemberSignIn(
      client.client_id,
      federatedSignIn({
        issuer,
        clientId: 'fhir',
        clientSecret: 'upstream-secret',
        claim: 'member_id',
        scope: 'openid member',
      }),
    );
  }

  function authorizeUrl(client: IssuedSmartApp, challenge: string, state: string): string {
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: APP_REDIRECT,
      scope: 'launch/patient openid fhirUser patient/*.rs',
      state,
      aud: `${base}/r4`,
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    return `${base}/oauth2/authorize?${query.toString()}`;
  }

  /** authorize → the plan's sign-in page → its federated link → the provider's form, signed in as `login`. */
  async function throughProvider(walker: CookieWalker, client: IssuedSmartApp, login: string, state: string) {
    const verifier = pkce();
    const signIn = await walker.follow(authorizeUrl(client, verifier.challenge, state));
    expect(signIn.page?.html).toContain('id="federated-sign-in"');
    const upstream = await walker.follow(linkHref(signIn.page!, /Sign in with/));
    expect(upstream.page?.url.startsWith(provider.issuer)).toBe(true);
    const back = await walker.follow(formAction(upstream.page!), {
      method: 'POST',
      form: { prompt: 'login', login, password: 'any' },
    });
    return { back, verifier };
  }

  it('a member signs in at the plan’s provider, approves, and the app’s token reads their record', async () => {
    const walker = new CookieWalker([base, provider.issuer]);
    const { back, verifier } = await throughProvider(walker, app, 'carol', 'st-1');
    const consent = back.page!;
    expect(consent.status).toBe(200);
    expect(consent.url).toContain('/oauth2/member/consent?tx=');
    expect(consent.html).toContain('Sleep Diary');
    const form = new URLSearchParams({
      tx: formField(consent.html, 'tx')!,
      csrf: formField(consent.html, 'csrf')!,
      decision: 'approve',
    });
    for (const m of consent.html.matchAll(/name="scope" value="([^"]*)"/g)) form.append('scope', m[1]);
    const decided = await walker.follow(`${base}/oauth2/member/consent`, { method: 'POST', form });
    const redirect = new URL(decided.left!);
    expect(redirect.origin + redirect.pathname).toBe(APP_REDIRECT);
    expect(redirect.searchParams.get('state')).toBe('st-1');
    const token = await request(t.server)
      .post('/oauth2/token')
      .type('form')
      .send({
        grant_type: 'authorization_code',
        code: redirect.searchParams.get('code'),
        redirect_uri: APP_REDIRECT,
        client_id: app.client_id,
        code_verifier: verifier.verifier,
      })
      .expect(200);
    expect(token.body.patient).toBe(member.patientId);
    const read = await request(t.server)
      .get(`/r4/Patient/${member.patientId}`)
      .set(bearer(token.body.access_token));
    expect(read.status).toBe(200);
    expect(read.body.name[0].family).toBe('Fed');
  });

  it('a person the plan does not know: access_denied with the app’s state, no session', async () => {
    const walker = new CookieWalker([base, provider.issuer]);
    const { back } = await throughProvider(walker, app, 'mallory', 'st-2');
    const redirect = new URL(back.left!);
    expect(redirect.origin + redirect.pathname).toBe(APP_REDIRECT);
    expect(Object.fromEntries(redirect.searchParams)).toEqual({
      error: 'access_denied',
      error_description: 'the signed-in person is not a member of this plan',
      state: 'st-2',
    });
  });

  it('the member cancels at the provider: access_denied with the app’s state', async () => {
    const walker = new CookieWalker([base, provider.issuer]);
    const signIn = await walker.follow(authorizeUrl(app, pkce().challenge, 'st-3'));
    const upstream = await walker.follow(linkHref(signIn.page!, /Sign in with/));
    const back = await walker.follow(linkHref(upstream.page!, /Cancel/));
    const redirect = new URL(back.left!);
    expect(redirect.searchParams.get('error')).toBe('access_denied');
    expect(redirect.searchParams.get('state')).toBe('st-3');
  });

  it('a callback no browser started here (forged state): an error page, not a redirect', async () => {
    const res = await request(t.server).get(FEDERATED_CALLBACK_PATH).query({ code: 'x', state: 'forged' });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(res.text).toMatch(/unknown, expired or already finished/);
    const none = await request(t.server).get(FEDERATED_CALLBACK_PATH);
    expect(none.status).toBe(400);
  });

  it('start: an unknown transaction, or a plan that signs members in here, is an error page', async () => {
    expect((await request(t.server).get('/oauth2/member/federated/start').query({ tx: 'nope' })).status).toBe(
      400,
    );
    expect((await request(t.server).get('/oauth2/member/federated/start')).status).toBe(400);
    const builtIn = await createPlan(t, 'Built-in Plan');
    const res = await request(t.server)
      .get('/oauth2/member/federated/start')
      .query({ plan: builtIn.customer });
    expect(res.status).toBe(400);
    expect(res.text).toMatch(/signs its members in here/);
  });

  it('the plan’s provider is down: temporarily_unavailable with the app’s state', async () => {
    const downPlan = await createPlan(t, 'Down Plan');
    const downApp = await createSmartApp(t, downPlan, { redirectUris: [APP_REDIRECT] });
    await federate(downPlan, `http://127.0.0.1:${await freePort()}`);
    const walker = new CookieWalker([base]);
    const signIn = await walker.follow(authorizeUrl(downApp, pkce().challenge, 'st-4'));
    const back = await walker.follow(linkHref(signIn.page!, /Sign in with/));
    const redirect = new URL(back.left!);
    expect(redirect.searchParams.get('error')).toBe('temporarily_unavailable');
    expect(redirect.searchParams.get('state')).toBe('st-4');
  });

  it('a federated plan takes no member secret on the built-in form', async () => {
    const secretMember = await createMember(t, plan, 'Secret');
    const walker = new CookieWalker([base]);
    const signIn = await walker.follow(authorizeUrl(app, pkce().challenge, 'st-5'));
    const res = await walker.follow(`${base}/oauth2/member/sign-in`, {
      method: 'POST',
      form: {
        tx: new URL(signIn.page!.url).searchParams.get('tx')!,
        csrf: walker.cookie(base, 'member_csrf')!,
        username: secretMember.app_user_id,
        password: secretMember.password,
      },
    });
    expect(res.page?.status).toBe(400);
    expect(res.page?.html).toContain('Sign in with Federated Health.');
    expect(res.page?.html).toContain('id="federated-sign-in"');
    expect(walker.cookie(base, 'member_session')).toBeUndefined();
  });
});
