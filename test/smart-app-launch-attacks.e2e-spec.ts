import request from 'supertest';
import {
  bearer,
  createMember,
  createPlan,
  createSmartApp,
  createTestApp,
  formField,
  IDENTITY_TEST_ENV,
  launchToCode,
  locationParams,
  pkce,
  signInAt,
  SmartMember,
  TestApp,
  TestClient,
} from '@app/testing';
import type { IssuedSmartApp } from '../src/modules/auth/clients/clients.service';

const TOKEN = '/oauth2/token';
const REDIRECT = 'https://app.example/callback';
/** Failed sign-ins a (member, address) pair may make per window in this file. */
const SIGN_IN_FAILURES = 4;

describe('SMART App Launch: bad input and attacks on the authorization server (e2e)', () => {
  let t: TestApp;
  let plan: TestClient;
  let otherPlan: TestClient;
  let app: IssuedSmartApp;
  let otherApp: IssuedSmartApp;
  let confidential: IssuedSmartApp;
  let member: SmartMember;
  let otherMember: SmartMember;
  let aud: string;
  beforeAll(async () => {
    t = await createTestApp({
      ...IDENTITY_TEST_ENV,
      TOKEN_FAILURE_LIMIT: String(SIGN_IN_FAILURES),
      AUTH_FAILURE_LIMIT_PER_ADDRESS: '1000',
    });
    plan = await createPlan(t, 'Acme Health');
    otherPlan = await createPlan(t, 'Other Health');
    app = await createSmartApp(t, plan, { redirectUris: [REDIRECT] });
    otherApp = await createSmartApp(t, plan, { redirectUris: ['https://other.example/cb'] });
    confidential = await createSmartApp(t, plan, {
      redirectUris: ['https://conf.example/cb'],
      confidential: true,
    });
    member = await createMember(t, plan);
    otherMember = await createMember(t, otherPlan, 'Other');
    aud = `${t.settings.urls.base}/r4`;
  });
  afterAll(async () => t?.close());

  const authorize = (params: Record<string, string>) =>
    request(t.server)
      .get('/oauth2/authorize')
      .query({
        response_type: 'code',
        client_id: app.client_id,
        redirect_uri: REDIRECT,
        scope: 'launch/patient patient/*.rs',
        state: 'st-1',
        aud,
        code_challenge: pkce().challenge,
        code_challenge_method: 'S256',
        ...params,
      });
  const exchange = (form: Record<string, string>) =>
    request(t.server)
      .post(TOKEN)
      .type('form')
      .send({ grant_type: 'authorization_code', redirect_uri: REDIRECT, client_id: app.client_id, ...form });

  describe('authorize: an unknown client or redirect URI gets an error page, never a redirect', () => {
    it.each([
      ['unregistered', 'https://evil.example/callback'],
      ['extra path', `${REDIRECT}/more`],
      ['extra query', `${REDIRECT}?next=https://evil.example`],
      ['javascript:', 'javascript:alert(1)'],
      ['other case', 'https://APP.example/callback'],
    ])('%s redirect_uri → 400 page, no Location', async (_name, uri) => {
      const res = await authorize({ redirect_uri: uri });
      expect(res.status).toBe(400);
      expect(res.headers.location).toBeUndefined();
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toContain('did not register');
    });

    it('unknown or missing client_id → 400 page', async () => {
      expect((await authorize({ client_id: 'nope' })).status).toBe(400);
      const missing = await request(t.server).get('/oauth2/authorize').query({ redirect_uri: REDIRECT });
      expect(missing.status).toBe(400);
      expect(missing.headers.location).toBeUndefined();
    });
  });

  describe('authorize: other errors go back to the app with error, error_description and state', () => {
    it.each([
      ['missing state', { state: '' }, 'invalid_request', undefined],
      ['plain PKCE', { code_challenge_method: 'plain' }, 'invalid_request', 'st-1'],
      ['PKCE without a method (plain by default)', { code_challenge_method: '' }, 'invalid_request', 'st-1'],
      [
        'public app without PKCE',
        { code_challenge: '', code_challenge_method: '' },
        'invalid_request',
        'st-1',
      ],
      ['aud of another server', { aud: 'https://other-server.example/r4' }, 'invalid_request', 'st-1'],
      ['aud of no version', { aud: `${t?.settings.urls.base ?? ''}/r5` }, 'invalid_request', 'st-1'],
      ['response_type token', { response_type: 'token' }, 'unsupported_response_type', 'st-1'],
      ['no known scope', { scope: 'launch system/*.*' }, 'invalid_scope', 'st-1'],
    ])('%s', async (_name, params, error, state) => {
      const res = await authorize(params);
      expect(res.status).toBe(302);
      expect(res.headers.location.startsWith(`${REDIRECT}?`)).toBe(true);
      const q = locationParams(res);
      expect(q.get('error')).toBe(error);
      expect(q.get('error_description')).toBeTruthy();
      expect(q.get('state') ?? undefined).toBe(state);
      expect(q.get('code')).toBeNull();
    });

    it('repeated or odd parameters are a 4xx or a redirect, never a 500', async () => {
      const odd = await request(t.server).get(
        `/oauth2/authorize?client_id=${app.client_id}&client_id=x&redirect_uri=${encodeURIComponent(REDIRECT)}&state=a&state=b`,
      );
      expect(odd.status).toBeLessThan(500);
      const post = await request(t.server)
        .post('/oauth2/authorize')
        .type('json')
        .send({ client_id: { $ne: 1 } });
      expect(post.status).toBe(400);
    });
  });

  describe('token endpoint', () => {
    it('wrong or missing code_verifier → invalid_grant; the right one still cannot be replayed', async () => {
      const verifier = pkce();
      const { params } = await launchToCode(t, app, member, { pkce: verifier });
      const code = params.get('code')!;
      const wrong = await exchange({ code, code_verifier: pkce().verifier });
      expect(wrong.status).toBe(400);
      expect(wrong.body.error).toBe('invalid_grant');
      // the failed attempt used the code up: a stolen code is worth one try
      expect((await exchange({ code, code_verifier: verifier.verifier })).body.error).toBe('invalid_grant');
      const again = await launchToCode(t, app, member, { agent: undefined });
      const missing = await exchange({ code: again.params.get('code')! });
      expect(missing.body).toMatchObject({
        error: 'invalid_grant',
        error_description: expect.stringMatching(/code_verifier/),
      });
    });

    it('code reuse → invalid_grant, and the tokens the code issued stop working', async () => {
      const verifier = pkce();
      const { params } = await launchToCode(t, app, member, { pkce: verifier });
      const form = { code: params.get('code')!, code_verifier: verifier.verifier };
      const first = await exchange(form).expect(200);
      await request(t.server)
        .get(`/r4/Patient/${member.patientId}`)
        .set(bearer(first.body.access_token))
        .expect(200);
      const second = await exchange(form);
      expect(second.body.error).toBe('invalid_grant');
      const after = await request(t.server)
        .get(`/r4/Patient/${member.patientId}`)
        .set(bearer(first.body.access_token));
      expect(after.status).toBe(401);
      const refreshed = await request(t.server).post(TOKEN).type('form').send({
        grant_type: 'refresh_token',
        refresh_token: first.body.refresh_token,
        client_id: app.client_id,
      });
      expect(refreshed.body.error).toBe('invalid_grant');
    });

    it('a code of another client, or with another redirect_uri → invalid_grant', async () => {
      const verifier = pkce();
      const { params } = await launchToCode(t, app, member, { pkce: verifier });
      const code = params.get('code')!;
      const stolen = await exchange({
        code,
        code_verifier: verifier.verifier,
        client_id: otherApp.client_id,
        redirect_uri: otherApp.redirect_uris[0],
      });
      expect(stolen.body.error).toBe('invalid_grant');
      const elsewhere = await exchange({
        code,
        code_verifier: verifier.verifier,
        redirect_uri: `${REDIRECT}/x`,
      });
      expect(elsewhere.body.error).toBe('invalid_grant');
    });

    it('an expired code → invalid_grant', async () => {
      const verifier = pkce();
      const { params } = await launchToCode(t, app, member, { pkce: verifier });
      await t.connection
        .collection('smart_credentials')
        .updateMany({ kind: 'code', used: false }, { $set: { expiresAt: new Date(Date.now() - 1000) } });
      const res = await exchange({ code: params.get('code')!, code_verifier: verifier.verifier });
      expect(res.body).toEqual({ error: 'invalid_grant', error_description: 'the code has expired' });
    });

    it('a confidential app authenticates (client_secret_basic); without its secret → 401 invalid_client', async () => {
      const { params } = await launchToCode(t, confidential, member);
      const form = {
        grant_type: 'authorization_code',
        code: params.get('code')!,
        redirect_uri: confidential.redirect_uris[0],
      };
      const anonymous = await request(t.server)
        .post(TOKEN)
        .type('form')
        .send({ ...form, client_id: confidential.client_id });
      expect(anonymous.status).toBe(401);
      expect(anonymous.body.error).toBe('invalid_client');
      const verifier = pkce();
      const { params: p2 } = await launchToCode(t, confidential, member, { pkce: verifier });
      const res = await request(t.server)
        .post(TOKEN)
        .auth(confidential.client_id, confidential.client_secret!)
        .type('form')
        .send({ ...form, code: p2.get('code')!, code_verifier: verifier.verifier });
      expect(res.status).toBe(200);
      expect(res.body.patient).toBe(member.patientId);
    });

    it('refresh may narrow the scope, never widen it', async () => {
      const verifier = pkce();
      const { params } = await launchToCode(t, app, member, {
        pkce: verifier,
        scope: 'launch/patient patient/*.rs offline_access',
      });
      const tokens = (
        await exchange({ code: params.get('code')!, code_verifier: verifier.verifier }).expect(200)
      ).body;
      const refresh = (scope: string, token: string) =>
        request(t.server)
          .post(TOKEN)
          .type('form')
          .send({ grant_type: 'refresh_token', refresh_token: token, client_id: app.client_id, scope });
      const wider = await refresh('launch/patient patient/*.cruds offline_access', tokens.refresh_token);
      expect(wider.status).toBe(400);
      expect(wider.body.error).toBe('invalid_scope');
      // the refused request used nothing: a later narrowing with the same token works
      const narrow = await refresh('patient/*.rs offline_access', tokens.refresh_token);
      expect(narrow.status).toBe(200);
      expect(narrow.body.scope).toBe('patient/*.rs offline_access');
    });
  });

  describe('pages', () => {
    it('a member of another plan cannot sign in to this plan; their session does not count here', async () => {
      const start = await authorize({});
      const agent = request.agent(t.server);
      const res = await signInAt(
        agent,
        start.headers.location,
        otherMember.app_user_id,
        otherMember.password,
      );
      expect(res.status).toBe(401);
      expect(res.text).toContain('wrong');
      // signed in at the other plan (through its own app), the browser is still asked to sign in here
      const otherPlansApp = await createSmartApp(t, otherPlan);
      await launchToCode(t, otherPlansApp, otherMember, { agent });
      const again = await agent
        .get('/oauth2/authorize')
        .query(Object.fromEntries(new URL(start.request.url).searchParams));
      expect(again.headers.location).toMatch(/^\/oauth2\/member\/sign-in\?tx=/);
    });

    it('CSRF: a consent form without this browser’s token → 403, nothing issued', async () => {
      const start = await authorize({});
      const victim = request.agent(t.server);
      const signedIn = await signInAt(victim, start.headers.location, member.app_user_id, member.password);
      expect(signedIn.status).toBe(303);
      const consent = await victim.get(signedIn.headers.location).expect(200);
      const forged = await victim
        .post('/oauth2/member/consent')
        .type('form')
        .send({
          tx: formField(consent.text, 'tx'),
          csrf: 'forged-by-another-site',
          scope: 'patient/*.rs',
          decision: 'approve',
        });
      expect(forged.status).toBe(403);
      expect(forged.headers.location).toBeUndefined();
      const noField = await victim
        .post('/oauth2/member/consent')
        .type('form')
        .send({ tx: formField(consent.text, 'tx'), decision: 'approve' });
      expect(noField.status).toBe(403);
    });

    it('deny → access_denied with state; narrowing grants only what stayed ticked', async () => {
      const start = await authorize({ scope: 'launch/patient patient/*.rs patient/Observation.rs' });
      const agent = request.agent(t.server);
      const signedIn = await signInAt(agent, start.headers.location, member.app_user_id, member.password);
      const consent = await agent.get(signedIn.headers.location).expect(200);
      expect(consent.text).toContain('Read and search your health records');
      expect(consent.text).toContain('Read and search your Observation records');
      const denied = await agent
        .post('/oauth2/member/consent')
        .type('form')
        .send({ tx: formField(consent.text, 'tx'), csrf: formField(consent.text, 'csrf'), decision: 'deny' })
        .expect(303);
      expect(Object.fromEntries(locationParams(denied))).toEqual({
        error: 'access_denied',
        error_description: expect.any(String),
        state: 'st-1',
      });
      const verifier = pkce();
      const narrowed = await launchToCode(t, app, member, {
        agent,
        pkce: verifier,
        scope: 'launch/patient patient/*.rs patient/Observation.rs',
        // an extra scope slipped into the form is ignored: only what the app asked can be granted
        scopes: ['launch/patient', 'patient/Observation.rs', 'user/*.cruds'],
      });
      const tokens = await exchange({
        code: narrowed.params.get('code')!,
        code_verifier: verifier.verifier,
      }).expect(200);
      expect(tokens.body.scope).toBe('launch/patient patient/Observation.rs');
    });

    it('sign-in throttle: after the allowed failures even the right secret waits (429, Retry-After); scrypt runs are bounded', async () => {
      const victim = await createMember(t, plan, 'Throttled');
      const start = await authorize({});
      const agent = request.agent(t.server);
      const page = await agent.get(start.headers.location).expect(200);
      const attempt = (password: string) =>
        agent
          .post('/oauth2/member/sign-in')
          .type('form')
          .send({
            tx: formField(page.text, 'tx'),
            csrf: formField(page.text, 'csrf'),
            username: victim.app_user_id,
            password,
          });
      for (let i = 0; i < SIGN_IN_FAILURES; i++) expect((await attempt(`wrong-${i}`)).status).toBe(401);
      const refused = await attempt(victim.password);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(refused.text).toContain('Too many failed sign-ins');
      // another member from the same address is not locked out by this one's failures
      const other = await launchToCode(t, app, member);
      expect(other.params.get('code')).toBeTruthy();
    });

    it('every page forbids framing and third-party content, and carries no-store', async () => {
      const start = await authorize({});
      const agent = request.agent(t.server);
      const signIn = await agent.get(start.headers.location).expect(200);
      for (const res of [
        signIn,
        await request(t.server).get('/oauth2/authorize').query({ client_id: 'x' }),
      ]) {
        expect(res.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
        expect(res.headers['content-security-policy']).toMatch(/default-src 'none'/);
        expect(res.headers['x-frame-options']).toBe('DENY');
        expect(res.headers['cache-control']).toBe('no-store');
      }
      expect(signIn.text).toMatch(/<label for="username">Member ID<\/label>/);
      expect(signIn.text).toMatch(/<label for="password">Password<\/label>/);
      expect(signIn.text).not.toMatch(/<script|https?:\/\/(?!app\.example)/);
    });
  });
});
