import request from 'supertest';
import {
  bearer,
  formField,
  createMember,
  createPlan,
  createSmartApp,
  createTestApp,
  IDENTITY_TEST_ENV,
  launchToCode,
  pkce,
  SmartMember,
  TestApp,
  TestClient,
} from '@app/testing';
import type { IssuedSmartApp } from '../src/modules/auth/clients/clients.service';

const TOKEN = '/oauth2/token';

function claims(jwt: string): Record<string, any> {
  return JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString());
}

describe('SMART App Launch: standalone launch, member sign-in, consent, token (e2e)', () => {
  let t: TestApp;
  let plan: TestClient;
  let app: IssuedSmartApp;
  let member: SmartMember;
  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    plan = await createPlan(t, 'Acme Health');
    app = await createSmartApp(t, plan);
    member = await createMember(t, plan);
  });
  afterAll(async () => t?.close());

  it('authorize → sign-in → consent → code → token: the member’s patient, granted scopes, claims; the token reads the record', async () => {
    const verifier = pkce();
    const { params, state } = await launchToCode(t, app, member, { pkce: verifier });
    expect(params.get('state')).toBe(state);
    const code = params.get('code')!;
    expect(code).toBeTruthy();
    const res = await request(t.server)
      .post(TOKEN)
      .type('form')
      .send({
        grant_type: 'authorization_code',
        code,
        redirect_uri: app.redirect_uris[0],
        client_id: app.client_id,
        code_verifier: verifier.verifier,
      })
      .expect(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toEqual({
      access_token: expect.any(String),
      token_type: 'Bearer',
      expires_in: 7200,
      scope: 'launch/patient openid fhirUser patient/*.rs offline_access',
      patient: member.patientId,
      refresh_token: expect.any(String),
      id_token: expect.any(String),
    });
    const access = claims(res.body.access_token);
    expect(access).toMatchObject({
      sub: String(member.service_user_id),
      client_id: plan.client_id,
      sub_type: 'user',
      scope: 'launch/patient openid fhirUser patient/*.rs offline_access',
      smart: { app: app.client_id, patient: member.patientId, grant: expect.any(String) },
    });
    const id = claims(res.body.id_token);
    expect(id.aud).toBe(app.client_id);
    expect(id.fhirUser).toBe(`${t.settings.urls.base}/r4/Patient/${member.patientId}`);
    const read = await request(t.server)
      .get(`/r4/Patient/${member.patientId}`)
      .set(bearer(res.body.access_token));
    expect(read.status).toBe(200);
    expect(read.body.name[0].family).toBe('Doe');
  });

  const launchTokens = async (scope?: string) => {
    const verifier = pkce();
    const { params, agent } = await launchToCode(t, app, member, { pkce: verifier, scope });
    const res = await request(t.server)
      .post(TOKEN)
      .type('form')
      .send({
        grant_type: 'authorization_code',
        code: params.get('code')!,
        redirect_uri: app.redirect_uris[0],
        client_id: app.client_id,
        code_verifier: verifier.verifier,
      })
      .expect(200);
    return { tokens: res.body, agent };
  };
  const refresh = (token: string) =>
    request(t.server)
      .post(TOKEN)
      .type('form')
      .send({ grant_type: 'refresh_token', refresh_token: token, client_id: app.client_id });

  it('no refresh token without offline_access/online_access; refresh rotates', async () => {
    const { tokens } = await launchTokens('launch/patient patient/*.rs');
    expect(tokens.refresh_token).toBeUndefined();
    expect(tokens.id_token).toBeUndefined();
    const { tokens: offline } = await launchTokens();
    const next = await refresh(offline.refresh_token).expect(200);
    expect(next.body.refresh_token).not.toBe(offline.refresh_token);
    expect(next.body.patient).toBe(member.patientId);
  });

  it('connected apps: revoking stops the access token and the refresh token at once', async () => {
    const { tokens, agent } = await launchTokens();
    const page = await agent.get('/oauth2/member/apps').expect(200);
    expect(page.text).toContain(app.name);
    const grant = formField(page.text, 'grant')!;
    const done = await agent
      .post('/oauth2/member/apps/revoke')
      .type('form')
      .send({ csrf: formField(page.text, 'csrf'), grant })
      .expect(200);
    expect(done.text).toContain('can no longer use your record');
    await request(t.server)
      .get(`/r4/Patient/${member.patientId}`)
      .set(bearer(tokens.access_token))
      .expect(401);
    expect((await refresh(tokens.refresh_token)).body.error).toBe('invalid_grant');
  });

  it('introspection (RFC 7662) for the plan and the app; revocation (RFC 7009) by the public app', async () => {
    const { tokens } = await launchTokens();
    const introspect = (token: string, who: Record<string, string>) =>
      request(t.server)
        .post('/oauth2/introspect')
        .type('form')
        .send({ token, ...who });
    const asPlan = { client_id: plan.client_id, client_secret: plan.client_secret };
    const live = await introspect(tokens.access_token, asPlan).expect(200);
    expect(live.body).toMatchObject({
      active: true,
      client_id: app.client_id,
      sub: String(member.service_user_id),
      patient: member.patientId,
      scope: tokens.scope,
    });
    // a public client may not introspect; another plan learns nothing
    expect((await introspect(tokens.access_token, { client_id: app.client_id })).status).toBe(401);
    const stranger = await createPlan(t);
    expect(
      (
        await introspect(tokens.access_token, {
          client_id: stranger.client_id,
          client_secret: stranger.client_secret,
        })
      ).body,
    ).toEqual({ active: false });
    await request(t.server)
      .post('/oauth2/revoke')
      .type('form')
      .send({ token: tokens.refresh_token, client_id: app.client_id })
      .expect(200);
    expect((await introspect(tokens.access_token, asPlan)).body).toEqual({ active: false });
    await request(t.server)
      .get(`/r4/Patient/${member.patientId}`)
      .set(bearer(tokens.access_token))
      .expect(401);
    // unknown tokens are no error (RFC 7009 §2.2)
    await request(t.server)
      .post('/oauth2/revoke')
      .type('form')
      .send({ token: 'nothing', client_id: app.client_id })
      .expect(200);
  });

  it('discovery tells the truth: authorize, PKCE S256, introspection, revocation, capabilities; the CapabilityStatement too', async () => {
    for (const path of [
      '/.well-known/smart-configuration',
      '/r4/.well-known/smart-configuration',
      '/stu3/.well-known/smart-configuration',
    ]) {
      const res = await request(t.server).get(path).expect(200);
      expect(res.body).toMatchObject({
        authorization_endpoint: `${t.settings.urls.auth}/oauth2/authorize`,
        token_endpoint: `${t.settings.urls.auth}/oauth2/token`,
        introspection_endpoint: `${t.settings.urls.auth}/oauth2/introspect`,
        revocation_endpoint: `${t.settings.urls.auth}/oauth2/revoke`,
        code_challenge_methods_supported: ['S256'],
      });
      expect(res.body.capabilities).toEqual(
        expect.arrayContaining([
          'launch-standalone',
          'client-public',
          'context-standalone-patient',
          'authorize-post',
          'permission-v2',
        ]),
      );
    }
    const cs = await request(t.server).get('/r4/metadata').expect(200);
    const oauth = cs.body.rest[0].security.extension[0].extension;
    expect(oauth).toContainEqual({ url: 'authorize', valueUri: `${t.settings.urls.auth}/oauth2/authorize` });
    // the advertised endpoint works with a POST form (authorize-post)
    const post = await request(t.server)
      .post('/oauth2/authorize')
      .type('form')
      .send({
        response_type: 'code',
        client_id: app.client_id,
        redirect_uri: app.redirect_uris[0],
        state: 's',
        aud: `${t.settings.urls.base}/r4`,
        scope: 'patient/*.rs',
        code_challenge: pkce().challenge,
        code_challenge_method: 'S256',
      });
    expect(post.status).toBe(302);
    expect(post.headers.location).toMatch(/^\/oauth2\/member\/sign-in\?tx=/);
  });

  it('CORS: discovery for any origin; token endpoints and FHIR for registered app origins only; user management never', async () => {
    const appOrigin = new URL(app.redirect_uris[0]).origin;
    const anywhere = await request(t.server)
      .get('/r4/.well-known/smart-configuration')
      .set('Origin', 'https://anyone.example');
    expect(anywhere.headers['access-control-allow-origin']).toBe('*');
    const meta = await request(t.server).get('/r4/metadata').set('Origin', 'https://anyone.example');
    expect(meta.headers['access-control-allow-origin']).toBe('*');
    const preflight = await request(t.server)
      .options('/oauth2/token')
      .set('Origin', appOrigin)
      .set('Access-Control-Request-Method', 'POST');
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe(appOrigin);
    const fhir = await request(t.server).get(`/r4/Patient/${member.patientId}`).set('Origin', appOrigin);
    expect(fhir.headers['access-control-allow-origin']).toBe(appOrigin);
    const stranger = await request(t.server).options('/oauth2/token').set('Origin', 'https://evil.example');
    expect(stranger.headers['access-control-allow-origin']).toBeUndefined();
    for (const path of [
      '/user-management/v1/user',
      '/user-management/v1/user/auth-code',
      '/oauth2/member/consent',
    ]) {
      const res = await request(t.server)
        .options(path)
        .set('Origin', appOrigin)
        .set('Access-Control-Request-Method', 'POST');
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
    }
  });
});
