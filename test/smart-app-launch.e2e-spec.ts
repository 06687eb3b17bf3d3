import request from 'supertest';
import {
  bearer,
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
});
